#pragma once
// What a WATCH served from the cache has to do, decided before any byte is written
// (contract W1, W4, W8, W9, R4): plain C++, no event loop, so it is unit-tested directly.
// cached_watch.cpp turns a WatchPlan into a stream.

#include <chrono>
#include <cstdint>
#include <optional>

#include "cache/encoding.h"
#include "cache/status.h"
#include <string>
#include <string_view>
#include <variant>

#include "cache/query/list_options.h"
#include "proxy/api_status.h"
#include "proxy/media.h"
#include "watch/api_resource.h"
#include "watch/fanout/watch_filter.h"

namespace proxy {

struct WatchPlan {
  enum class Start {
    Snapshot,  // initial ADDED events for the current state, then changes (W4 unset/0, W9)
    Resume,    // history after `from_rv`, then changes (W4 RV=N)
    Now,       // changes after the current RV only (W9 sendInitialEvents=false)
  };
  Start start = Start::Snapshot;
  uint64_t from_rv = 0;  // Resume: the requested RV
  // W9 with RV=N: wait (bounded) until the cache reaches N, else ERROR 504 TooLarge.
  std::optional<uint64_t> wait_for_rv;
  // RV unset (W4 "Most Recent", W9): the stream must start at a state at least as new
  // as a quorum read when the request arrived (C1), so the cache must first prove it
  // has reached the upstream's current revision (a fence), else the watch passes through.
  bool consistent = false;
  bool allow_bookmarks = false;
  // Send the k8s.io/initial-events-end bookmark after the initial events (W9).
  bool initial_events_end = false;
  // timeoutSeconds as the apiserver reads it (W8), else the randomized maximum.
  std::chrono::milliseconds lifetime{0};
  // timeoutSeconds < 0, or so large that Go's seconds-to-Duration product wraps negative
  // (9223372036854775807): the apiserver's watch deadline has passed before the stream
  // starts, so it answers 200 and ends the stream without an event (W8).
  bool ends_at_once = false;
  watch::WatchFilter filter;
};

// True when every media range of `accept` lets us answer with plain JSON watch events:
// no Table / PartialObjectMetadata transform (`as=`) requested, and JSON acceptable.
// Anything else passes through to the upstream, which renders those forms.
bool acceptsJsonWatch(const AcceptHeader& accept);

// How the apiserver would stream a watch for `accept` (W2, N2, N4): the first acceptable
// media range by quality decides (YAML has no stream serializer and is skipped). A
// protobuf PartialObjectMetadata (meta.k8s.io/v1) watch, what client-go's metadata
// informers send, is `metadata_only`; nullopt for any other transform (Table, JSON
// metadata: rendered upstream) or nothing acceptable.
struct WatchMedia {
  cache::Encoding encoding = cache::Encoding::Json;
  bool metadata_only = false;
};
std::optional<WatchMedia> watchMedia(const AcceptHeader& accept);

// The watch deadline kube-apiserver derives from timeoutSeconds:
// time.Duration(seconds) * time.Second, an int64 of nanoseconds that wraps on overflow.
// nullopt when absent; 0 means "no timeout given" (randomized) even when it wrapped to 0.
std::optional<int64_t> goWatchTimeoutNanos(std::optional<int64_t> timeout_seconds);

// The request target of a watch that passes through while the cache that would serve it
// is starting, with timeoutSeconds at most `cap`: the upstream then ends the watch by
// then, cleanly, and the client's next watch (from its last RV) finds the cache synced.
// Otherwise the pass-through would hold an upstream watch for as long as the client
// asked (client-go: 5-10 min), a second one of that resource. nullopt when the target
// stands as it is: a timeout within `cap`, one that has expired before the stream starts
// (W8) or that the apiserver refuses (400), or `cap` 0. Only the timeoutSeconds pairs
// change; every other byte of the target stays.
std::optional<std::string> cappedWatchTarget(std::string_view target, const cache::QueryValues& query,
                                             std::chrono::seconds cap);

// Decodes and validates the watch query as the apiserver does. `random_unit` in [0, 1)
// picks the lifetime for watches without timeoutSeconds: [max_lifetime/2, max_lifetime),
// the apiserver's [1800 s, 3600 s) with the default maximum.
// `watch_prefix`: the request came by the deprecated /watch/ path (W1). `shards_apply`:
// the upstream's ShardedListAndWatch gate is on, so a shardSelector selects (off, the
// apiserver ignores it).
std::variant<WatchPlan, HttpAnswer> planWatch(const cache::QueryValues& query, std::string_view namespace_name,
                                              const watch::ApiResource& resource,
                                              std::chrono::milliseconds max_lifetime, double random_unit,
                                              bool watch_prefix = false, bool shards_apply = false);

// The W5 "too old" Status object: 410 Expired with the history's message.
cache::Status expiredStatus(const std::string& message);

}  // namespace proxy
