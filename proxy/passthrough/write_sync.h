#pragma once
// Read-your-writes (--write-sync, issue #7): which writes wait for the cache before their
// answer goes out, and what "the cache has applied this write" means for the answer the
// apiserver gave. Plain code; the waiting itself is in passthrough.cpp.
//
// - create, update, patch (and subresource writes such as status or scale) answer the
//   object at its new resourceVersion: the cache has the write once its RV reaches it.
// - delete answers the deleted object (or a Status naming it). The object's RV is not
//   the deletion's (the apiserver returns the last stored state), so the condition is
//   that the object left the cache, or was replaced by one with another UID. An object
//   that stays after the delete (finalizers, a graceful pod deletion, a namespace being
//   terminated) is an update instead: its RV is reached.
// - deletecollection answers the list of deleted objects: each of them, as above.
// - Answers that name nothing (a Status from eviction or binding) are not held.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/query/query_values.h"
#include "cache/thread_safe_store.h"
#include "proxy/request_info.h"
#include "proxy/server/server_options.h"

namespace watch {
class CachedResource;
class InformerRegistry;
}  // namespace watch

namespace proxy {

// True for a request whose successful answer changes stored objects: create, update,
// patch, delete, deletecollection, including writes to subresources that change their
// object (status, scale, ...). Dry runs change nothing; proxy, exec, attach and the like
// are not object writes.
bool isObjectWrite(const RequestInfo& info, const cache::QueryValues& query);

// One object a delete removed (or marked for deletion).
struct DeletedObject {
  std::string key;  // "namespace/name" or "name" (cache::makeKey)
  std::string uid;  // "" when the answer did not say
  uint64_t resource_version = 0;
  // The object stays after the delete (finalizers, graceful deletion): then reaching its
  // RV is enough; otherwise it must leave the cache.
  bool stays = false;
};

struct WriteExpectation {
  uint64_t min_rv = 0;  // the cache RV must reach this (0: no condition)
  std::vector<DeletedObject> deleted;
};

// What the cache must show once it has applied a write that was answered 2xx with
// `body`. `request_namespace` names the object of a Status answer. nullopt when the body
// says nothing the cache can be checked against (then the answer is not held).
std::optional<WriteExpectation> expectationFor(const RequestInfo& info, std::string_view request_namespace,
                                               std::string_view body);

// True once `store` shows everything `expected` asks for.
bool satisfiedBy(const WriteExpectation& expected, const cache::ThreadSafeStore& store);

// The Warning header value for an answer sent before the cache caught up, in the
// apiserver's format: `299 - "..."`.
std::string writeSyncTimeoutWarning(std::string_view resource, std::chrono::milliseconds waited);

class ProxyMetrics;

// Read-your-writes for one write: its answer waits until the cache of `cached` shows the
// write, at most `timeout`.
struct WriteSyncTarget {
  std::shared_ptr<watch::CachedResource> cached;
  std::string request_namespace;  // the store namespace the request names ("" cluster-scoped)
  std::chrono::milliseconds timeout;
  ProxyMetrics& metrics;
};

// The cache the answer to `info` (request target `target`) waits for, or nullopt: only
// object writes to a resource that --write-sync (or its per-resource list) turns on, and
// only while the cache of that resource runs and has synced.
std::optional<WriteSyncTarget> writeSyncTargetFor(const RequestInfo& info, std::string_view target,
                                                  const ServerOptions& options, watch::InformerRegistry* registry,
                                                  ProxyMetrics& metrics);

}  // namespace proxy
