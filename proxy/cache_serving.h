#pragma once
// Internal to the event-loop translation units: answering resource requests from the
// cache instead of the upstream. The session (proxy_server.cpp) asks serveFromCache() first for every
// resource request; a nullopt answer means "not from the cache" and the request passes
// through unchanged (docs/routing.md has the table of what is served where).
//
//   get/list  -> serveCachedRead   (proxy/cached_read.cpp)
//   watch     -> serveCachedWatch  (proxy/cached_watch.cpp)
//   discovery -> serveCachedDiscovery (proxy/cached_discovery.cpp)

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "cache/clock.h"
#include "proxy/asio_beast.h"
#include "proxy/auth/review_flights.h"
#include "proxy/discovery_cache.h"
#include "proxy/downstream_request.h"
#include "proxy/forward_outcome.h"
#include "proxy/proxy_metrics.h"
#include "proxy/server_options.h"
#include "proxy/session_control.h"
#include "proxy/upstream_pool.h"
#include "watch/freshness.h"
#include "watch/informer_registry.h"

namespace proxy {
struct WriteExpectation;
}

namespace proxy::io {

// Everything a cached answer may need besides the request.
struct CacheContext {
  watch::InformerRegistry& registry;
  UpstreamPool& pool;  // this io thread's upstream connections (fence reads)
  SessionControl& control;
  const ServerOptions& options;
  ProxyMetrics& metrics;
  const cache::Clock& clock;  // the process's: requests' arrival, waits and deadlines
};

// Answers `req` from the cache and returns how it went, or nullopt without having read
// or written anything when the request must pass through.
asio::awaitable<std::optional<ForwardOutcome>> serveCachedRead(DownstreamRequest& req, CacheContext& ctx);
asio::awaitable<std::optional<ForwardOutcome>> serveCachedWatch(DownstreamRequest& req, CacheContext& ctx);

// A discovery document's fetch, shared by the requests that want it at the same time: the
// document, or null with `answered` (the apiserver gave no document: pass through) or
// without (the apiserver could not be asked).
struct DiscoveryFetch {
  DiscoveryDocumentPtr doc;
  bool answered = false;
};
using DiscoveryFlights = auth::ReviewFlights<DiscoveryFetch>;
// GET of a discovery document or /version from `documents` (proxy/cached_discovery.cpp).
asio::awaitable<std::optional<ForwardOutcome>> serveCachedDiscovery(DownstreamRequest& req, CacheContext& ctx,
                                                                   DiscoveryCache& documents, DiscoveryFlights& flights);

// What a read or watch needs to be answered from the cache beyond the store's RV:
// `arrived` set: a consistent read (C1), which needs a revision read after it arrived;
// else a state at least as new as `min_rv` (RV=N, R3).
struct FreshnessNeed {
  std::optional<cache::Clock::TimePoint> arrived;
  uint64_t min_rv = 0;
};
// Proves the cache of `cached` fresh enough for `need` within namespace `ns` ("" = all),
// sharing one upstream probe with every request waiting on the same scope
// (proxy/freshness_probe.cpp); nullopt: the request passes through.
asio::awaitable<std::optional<watch::Freshness>> proveFresh(CacheContext& ctx, const watch::CachedResource& cached,
                                                            std::string_view ns, const std::string& collection,
                                                            FreshnessNeed need);
// True when a state read at `state_rv` is covered by `freshness`: at or past its
// revision, or the very state it proved.
bool freshEnough(uint64_t state_rv, const watch::Freshness& freshness);

// "/api/v1/namespaces/ns/pods": the collection a request reads, without the name.
std::string collectionPath(const RequestInfo& info, std::string_view ns);

// Waits without blocking the io thread until `done()` holds (true) or `deadline` passes
// (false), checking it with a timer whose interval doubles from `first` up to `longest`:
// the waits this serves (R7, C1 fences, read-your-writes) are usually a few milliseconds,
// and polling costs nothing on the reflector's write path.
asio::awaitable<bool> awaitStore(const cache::Clock& clock, std::function<bool()> done, cache::Clock::TimePoint deadline,
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

// Waits until `store` shows the write `expected` describes (true) or `deadline` passes
// (false). The watch event usually lands within a millisecond or two of the answer, so
// the polling interval starts small and stays small.
asio::awaitable<bool> awaitCacheShows(const cache::Clock& clock, const WriteExpectation& expected,
                                      const cache::ThreadSafeStore& store, cache::Clock::TimePoint deadline);

// Waits until `store` reaches `rv` (true) or `deadline` passes (false).
asio::awaitable<bool> awaitResourceVersion(const cache::Clock& clock, const cache::ThreadSafeStore& store, uint64_t rv,
                                           cache::Clock::TimePoint deadline);

}  // namespace proxy::io
