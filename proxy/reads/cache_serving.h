#pragma once
// Internal to the event-loop translation units: answering resource requests from the
// cache instead of the upstream. The session (proxy_server.cpp) asks serveFromCache() first for every
// resource request; a nullopt answer means "not from the cache" and the request passes
// through unchanged (docs/routing.md has the table of what is served where).
//
//   get/list  -> serveCachedRead   (proxy/reads/cached_read.cpp)
//   watch     -> serveCachedWatch  (proxy/watches/cached_watch.cpp)
//   discovery -> serveCachedDiscovery (proxy/discovery/cached_discovery.cpp)

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "cache/change_signal.h"
#include "cache/clock.h"
#include "cache/query/list_options.h"
#include "proxy/asio_beast.h"
#include "proxy/auth/review_flights.h"
#include "proxy/discovery/discovery_cache.h"
#include "proxy/request.h"
#include "proxy/stream.h"
#include "proxy/forward_outcome.h"
#include "proxy/observability/proxy_metrics.h"
#include "proxy/server/server_options.h"
#include "proxy/server/session_control.h"
#include "proxy/upstream/upstream_pool.h"
#include "watch/freshness.h"
#include "watch/informer_registry.h"

namespace proxy {
struct WriteExpectation;
}

namespace proxy::io {

// The client a wait belongs to: when it leaves (a closed connection, a reset stream, a
// WebSocket close) the wait ends at once and `gone` is set, so that its request stops
// rather than passing through for no one. Watched only while a wait is suspended: a read
// that never waits costs nothing.
struct WaitingClient {
  ServerStream* out = nullptr;
  bool gone = false;
};

// Everything a cached answer may need besides the request.
struct CacheContext {
  watch::InformerRegistry& registry;
  UpstreamPool& pool;  // this io thread's upstream connections (fence reads)
  SessionControl& control;  // the request's stream's (ServerStream::control)
  const ServerOptions& options;
  ProxyMetrics& metrics;
  const cache::Clock& clock;  // the process's: requests' arrival, waits and deadlines
  WaitingClient client{};     // the request's, for its waits (not for probes others share)
};

// Answers `req` from the cache and returns how it went, or nullopt without having read
// or written anything when the request must pass through.
asio::awaitable<std::optional<ForwardOutcome>> serveCachedRead(const Request& req, ServerStream& out, CacheContext& ctx);
asio::awaitable<std::optional<ForwardOutcome>> serveCachedWatch(const Request& req, ServerStream& out,
                                                               CacheContext& ctx);

// A discovery document's fetch, shared by the requests that want it at the same time: the
// document, or null with `answered` (the apiserver gave no document: pass through) or
// without (the apiserver could not be asked).
struct DiscoveryFetch {
  DiscoveryDocumentPtr doc;
  bool answered = false;
};
using DiscoveryFlights = auth::ReviewFlights<DiscoveryFetch>;
// GET of a discovery document or /version from `documents` (proxy/discovery/cached_discovery.cpp).
asio::awaitable<std::optional<ForwardOutcome>> serveCachedDiscovery(const Request& req, ServerStream& out,
                                                                   CacheContext& ctx, DiscoveryCache& documents,
                                                                   DiscoveryFlights& flights);

// What a read or watch needs to be answered from the cache beyond the store's RV:
// `arrived` set: a consistent read (C1), which needs a revision read after it arrived;
// else a state at least as new as `min_rv` (RV=N, R3).
struct FreshnessNeed {
  std::optional<cache::Clock::TimePoint> arrived;
  uint64_t min_rv = 0;
  // The read lists the scope (a LIST, a watch's initial state): a proof that lists the
  // scope's metadata is worth it for larger scopes, since it costs the upstream less than
  // the list it saves.
  bool lists_scope = false;
  // The read's shard (shardSelector with the upstream's gate on): the proof may list the
  // shard's metadata only. Not owned; the probe copies it.
  const cache::ShardSelector* shard = nullptr;
};
// Proves the cache of `cached` fresh enough for `need` within namespace `ns` ("" = all),
// sharing one upstream probe with every request waiting on the same scope
// (proxy/reads/freshness_probe.cpp); nullopt: the request passes through.
asio::awaitable<std::optional<watch::Freshness>> proveFresh(CacheContext& ctx, const watch::CachedResource& cached,
                                                            std::string_view ns, const std::string& collection,
                                                            FreshnessNeed need);
// The upstream's ShardedListAndWatch gate, asked of it when not known (a LIST or WATCH
// with shardSelector needs it): On, the proxy answers the shard; Off, it ignores the
// selector as the upstream does; Unknown (the upstream did not say), the request passes
// through. `collection` is the request's, asked when the resource is built-in.
asio::awaitable<UpstreamFeatures::Gate> shardingGate(CacheContext& ctx, const watch::ApiResource& resource,
                                                     const std::string& collection);
// What a LIST or WATCH with `options` answers of the shard selector, as the upstream's
// gate decides: "" when there is none or the gate is off (then `options` drop it, as the
// upstream ignores it), the canonical selector when the cache answers the shard, nullopt
// when the request passes through (gate unknown, or a selector outside the grammar the
// cache evaluates: the upstream gives its own answer or error).
asio::awaitable<std::optional<std::string>> shardOf(CacheContext& ctx, const watch::ApiResource& resource,
                                                    const std::string& collection, cache::ListOptions& options);
// The same for a WATCH: whether its shardSelector selects (the gate is on and the cache
// reads the selector), false when there is none or the gate is off, nullopt when the
// watch passes through.
asio::awaitable<std::optional<bool>> shardsApply(const Request& req, CacheContext& ctx,
                                                 const watch::CachedResource& cached, const std::string& collection);

// True when a state read at `state_rv` is covered by `freshness`: at or past its
// revision, or the very state it proved.
bool freshEnough(uint64_t state_rv, const watch::Freshness& freshness);

// "/api/v1/namespaces/ns/pods": the collection a request reads, without the name.
// Escaped for the upstream's request line (watch::collectionPath).
std::string collectionPath(const RequestInfo& info, std::string_view ns);

// Waits without blocking the io thread until `done()` holds (true) or `deadline` passes
// (false), looking again each time one of the signals is notified (a store that moved, a
// probe that landed, an informer that started): no timer polls. `signals` is asked again
// each round, since what to watch may change (a cache that started meanwhile). Only the
// deadline is a timer.
using ChangeSignals = std::vector<const cache::ChangeSignal*>;
// With `client`, the wait also ends (false) when the client leaves.
asio::awaitable<bool> awaitChange(const cache::Clock& clock, const std::function<bool()>& done,
                                  const std::function<ChangeSignals()>& signals, cache::Clock::TimePoint deadline,
                                  WaitingClient* client = nullptr);
asio::awaitable<bool> awaitChange(const cache::Clock& clock, const std::function<bool()>& done,
                                  const cache::ChangeSignal& signal, cache::Clock::TimePoint deadline,
                                  WaitingClient* client = nullptr);

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
// (false): woken by each of the store's writes.
asio::awaitable<bool> awaitCacheShows(const cache::Clock& clock, const WriteExpectation& expected,
                                      const cache::ThreadSafeStore& store, cache::Clock::TimePoint deadline,
                                      WaitingClient* client = nullptr);

// Waits until `store` reaches `rv` (true) or `deadline` passes (false).
asio::awaitable<bool> awaitResourceVersion(const cache::Clock& clock, const cache::ThreadSafeStore& store, uint64_t rv,
                                           cache::Clock::TimePoint deadline, WaitingClient* client = nullptr);

}  // namespace proxy::io
