#pragma once
// Internal to the event-loop translation units: answering resource requests from the
// cache instead of the upstream. http_server.cpp asks serveFromCache() first for every
// resource request; a nullopt answer means "not from the cache" and the request passes
// through unchanged (docs/routing.md has the table of what is served where).
//
//   get/list  -> serveCachedRead   (proxy/cached_read.cpp)
//   watch     -> serveCachedWatch  (proxy/cached_watch.cpp)

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "proxy/io_internal.h"
#include "watch/informer_registry.h"

namespace proxy::io {

// Everything a cached answer may need besides the request.
struct CacheContext {
  watch::InformerRegistry& registry;
  UpstreamPool& pool;  // this io thread's upstream connections (fence reads)
  SessionControl& control;
  const ServerOptions& options;
  ProxyMetrics& metrics;
};

// Answers `req` from the cache and returns how it went, or nullopt without having read
// or written anything when the request must pass through.
asio::awaitable<std::optional<ForwardOutcome>> serveCachedRead(DownstreamRequest& req, CacheContext& ctx);
asio::awaitable<std::optional<ForwardOutcome>> serveCachedWatch(DownstreamRequest& req, CacheContext& ctx);

// C1 for reads with RV unset: true once the cache of `cached` is proven at least as new
// as a quorum read taken now (an upstream `GET <collection>?limit=1` fence, then a
// bounded wait for the store to reach its RV); false means "pass through".
asio::awaitable<bool> awaitConsistency(CacheContext& ctx, const watch::CachedResource& cached,
                                       const std::string& collection);
// "/api/v1/namespaces/ns/pods": the collection a request reads, without the name.
std::string collectionPath(const RequestInfo& info, std::string_view ns);

// Waits without blocking the io thread until `done()` holds (true) or `deadline` passes
// (false), checking it with a timer whose interval doubles from `first` up to `longest`:
// the waits this serves (R7, C1 fences, read-your-writes) are usually a few milliseconds,
// and polling costs nothing on the reflector's write path.
asio::awaitable<bool> awaitStore(std::function<bool()> done, std::chrono::steady_clock::time_point deadline,
                                 std::chrono::microseconds first, std::chrono::microseconds longest);

// R7 for a read or watch at RV=N beyond the cache. The apiserver brings its watch cache to
// etcd's revision with a progress request and answers at once any N that a write to any
// resource returned; the proxy's copy of an idle resource reaches such an N only with its
// next upstream event or bookmark (up to a minute), so waiting the apiserver's 3 s would
// turn its 200 into a 504. The store gets a short catch-up wait (a write this client just
// made is usually in flight), then the request passes through. While the upstream is down
// nothing can pass through: the wait is the apiserver's 3 s and the answer its 504.
enum class ResourceVersionWait { Reached, PassThrough, TooLarge };
asio::awaitable<ResourceVersionWait> awaitResourceVersionOrPassThrough(CacheContext& ctx,
                                                                       const cache::ThreadSafeStore& store,
                                                                       uint64_t rv);

// Waits until `store` reaches `rv` (true) or `deadline` passes (false).
asio::awaitable<bool> awaitResourceVersion(const cache::ThreadSafeStore& store, uint64_t rv,
                                           std::chrono::steady_clock::time_point deadline);

}  // namespace proxy::io
