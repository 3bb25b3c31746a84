// Freshness probes (issue #15; watch/freshness.h has the model, docs/design.md the
// measurements): how a request that needs a revision newer than the store's RV learns,
// with at most one upstream request shared by every request waiting on the resource,
// that the cache is fresh enough.
//
// A probe reads a revision Q from the upstream, then waits (bounded) until either the
// store reaches Q through its watch (a busy resource: milliseconds), or the store's
// objects in the scope are exactly the upstream's at Q (an idle resource, proven by a
// consistent PartialObjectMetadataList of the scope). Idle small scopes go straight to the
// metadata list (one request is both the fence and the proof); busy or large ones read a
// revision fence first and list metadata only if the store does not get there.
//
// Also here: the bounded waits for the store to catch up (awaitStore and its users,
// declared in cache_serving.h), which probes, RV=N reads and read-your-writes share.
#include <functional>
#include <optional>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <spdlog/spdlog.h>

#include "cache/metadata_list.h"
#include "proxy/cache_serving.h"
#include "proxy/proxy_metrics.h"
#include "proxy/write_sync.h"
#include "watch/cached_resource.h"
#include "watch/freshness.h"
#include "watch/upstream_health.h"

namespace proxy::io {
namespace {

using namespace std::chrono_literals;

// How long a probe waits for the store to reach its revision (or to match the metadata),
// and how long without any store movement ends that wait early: changes committed before
// the fence reach the proxy's watch within milliseconds; a store that does not move has
// nothing in flight.
constexpr auto kProbeWait = 250ms;
constexpr auto kQuietWait = 50ms;
constexpr auto kProbeTimeout = std::chrono::seconds(10);
// A resource whose store has not moved for this long is idle: its RV will not reach a
// fence by itself, so the probe lists metadata at once.
constexpr auto kIdleAfter = 1s;
// Back-to-back probes of one scope leave at most this often (a consistent read arriving
// while one is in flight waits for the next; the apiserver's progress requests to etcd are
// spaced 100 ms). At 1,000 consistent reads/s that is at most 50 probes/s.
constexpr auto kProbeSpacing = 20ms;
// Scopes with more objects are never proven by metadata (the list would cost the
// upstream more than the reads it saves); their consistent reads need a busy store.
constexpr size_t kMaxProofObjects = 1000;
constexpr size_t kMaxFenceBody = 4 << 20;
constexpr size_t kMaxMetadataBody = 64 << 20;
constexpr const char* kMetadataAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
// kube-apiserver keeps no watch cache for core/v1 events (--default-watch-cache-size
// excludes them), so a consistent LIST of them is one etcd range read: the cluster's
// revision in about a millisecond, where a LIST of a cached resource waits up to 100 ms
// for an etcd progress notification under churn. Any answer but 200 turns it off.
constexpr const char* kRevisionFencePath = "/api/v1/namespaces/default/events?limit=1";
std::atomic<bool> g_revision_fence_usable{true};

std::optional<uint64_t> listRevision(const std::string& body) {
  // A limit=1 list: small; only its metadata.resourceVersion matters.
  auto parsed = cache::parseMetadataList(body);
  if (parsed) return parsed->resource_version;
  return std::nullopt;
}

asio::awaitable<std::optional<UpstreamReply>> ask(CacheContext& ctx, const std::string& path, size_t max_body,
                                                  const std::string& accept) {
  watch::UpstreamHealth* health = ctx.pool.upstream().health();
  try {
    UpstreamReply reply = co_await callUpstream(ctx.pool, "GET", path, "", kProbeTimeout, max_body, ctx.options, accept);
    if (health) health->answered();
    co_return reply;
  } catch (const UpstreamFailure& failure) {
    spdlog::debug("freshness probe {}: {}", path, failure.what());
    if (health) health->failed(failure.what());
  } catch (const std::exception& e) {
    spdlog::debug("freshness probe {}: {}", path, e.what());
  }
  co_return std::nullopt;
}

// A revision at least as new as every write completed before the call (C3).
asio::awaitable<std::optional<uint64_t>> revisionFence(CacheContext& ctx, const std::string& collection) {
  if (g_revision_fence_usable.load(std::memory_order_relaxed)) {
    const std::string path = kRevisionFencePath;
    const std::string accept = "application/json";
    if (auto reply = co_await ask(ctx, path, kMaxFenceBody, accept)) {
      if (reply->code == 200) {
        if (auto rv = listRevision(reply->body)) co_return rv;
      }
      spdlog::info("revision fence {} answered {}: fencing with each resource's own list", kRevisionFencePath,
                   reply->code);
      g_revision_fence_usable.store(false, std::memory_order_relaxed);
    } else {
      co_return std::nullopt;
    }
  }
  const std::string path = collection + "?limit=1";
  const std::string accept = "application/json";
  auto reply = co_await ask(ctx, path, kMaxFenceBody, accept);
  if (!reply || reply->code != 200) co_return std::nullopt;
  co_return listRevision(reply->body);
}

asio::awaitable<std::optional<cache::MetadataList>> metadataList(CacheContext& ctx, const std::string& collection) {
  const std::string accept = kMetadataAccept;
  auto reply = co_await ask(ctx, collection, kMaxMetadataBody, accept);
  if (!reply || reply->code != 200) co_return std::nullopt;
  auto parsed = cache::parseMetadataList(reply->body);
  if (!parsed || parsed->has_continue) co_return std::nullopt;
  co_return std::move(parsed).value();
}

size_t objectsInScope(const cache::Snapshot& snapshot, std::string_view ns) {
  if (ns.empty()) return snapshot.size();
  cache::ListRequest scope;
  scope.namespace_name = ns;
  return snapshot.list(scope).items.size();
}

// Waits until the store reaches `revision` or, with `listed`, holds exactly its objects.
asio::awaitable<std::optional<watch::Freshness>> settle(const watch::CachedResource& cached, std::string_view ns,
                                                        uint64_t revision, const cache::MetadataList* listed) {
  const cache::ThreadSafeStore& store = cached.store();
  const auto deadline = cached.clock().now() + kProbeWait;
  while (true) {
    const uint64_t before = store.currentRV();
    bool reached = before >= revision;
    if (!reached && listed) {
      const auto snapshot = store.snapshot();
      reached = snapshot->resourceVersion() >= revision;
      if (!reached && cache::sameObjects(*snapshot, ns, *listed)) {
        const watch::Freshness proof{revision, snapshot->resourceVersion()};
        cached.freshness().record(ns, proof);
        cached.freshness().noteProven();
        co_return proof;
      }
    }
    if (reached) {
      cached.freshness().noteProven();
      co_return watch::Freshness{revision, 0};
    }
    if (cached.clock().now() >= deadline) co_return std::nullopt;
    const bool moved = co_await awaitStore(cached.clock(), [&] { return store.currentRV() != before; },
                                           std::min(deadline, cached.clock().now() + kQuietWait), 200us, 5ms);
    if (!moved) co_return std::nullopt;
  }
}

asio::awaitable<std::optional<watch::Freshness>> runProbe(CacheContext& ctx, const watch::CachedResource& cached,
                                                          std::string_view ns, const std::string& collection) {
  const auto snapshot = cached.store().snapshot();
  const bool provable = objectsInScope(*snapshot, ns) <= kMaxProofObjects;
  const bool idle = cached.freshness().quietFor(snapshot->resourceVersion(), kIdleAfter);
  const std::string name = cached.resource().displayName();
  const auto started = cached.clock().now();
  auto finish = [&](std::optional<watch::Freshness> result, const char* how) {
    ctx.metrics.freshnessProbe(name, result ? how : "unproven", cached.clock().now() - started);
    return result;
  };
  if (!(provable && idle)) {
    const auto fence = co_await revisionFence(ctx, collection);
    if (!fence) co_return finish(std::nullopt, "");
    if (auto reached = co_await settle(cached, ns, *fence, nullptr)) co_return finish(reached, "fence");
    if (!provable) co_return finish(std::nullopt, "");
  }
  const auto listed = co_await metadataList(ctx, collection);
  if (!listed) co_return finish(std::nullopt, "");
  auto result = co_await settle(cached, ns, listed->resource_version, &*listed);
  co_return finish(result, result && result->state_rv != 0 ? "metadata" : "fence");
}

// Lands the flight even when the leader's coroutine is destroyed mid-probe.
struct Landing {
  watch::ProbeFlights& flights;
  std::string scope;
  watch::ProbeFlightPtr flight;
  bool done = false;
  void land(std::optional<watch::Freshness> result) {
    flights.land(scope, flight, result);
    done = true;
  }
  ~Landing() {
    if (!done) flights.land(scope, flight, std::nullopt);
  }
};

}  // namespace

asio::awaitable<bool> awaitStore(const cache::Clock& clock, std::function<bool()> done, cache::Clock::TimePoint deadline,
                                 std::chrono::microseconds first, std::chrono::microseconds longest) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  auto interval = first;
  while (!done()) {
    const auto now = clock.now();
    if (now >= deadline) co_return false;
    timer.expires_at(std::min(deadline, now + interval));
    error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    interval = std::min(interval * 2, longest);
  }
  co_return true;
}

asio::awaitable<bool> awaitResourceVersion(const cache::Clock& clock, const cache::ThreadSafeStore& store, uint64_t rv,
                                           cache::Clock::TimePoint deadline) {
  co_return co_await awaitStore(clock, [&store, rv] { return store.currentRV() >= rv; }, deadline,
                                std::chrono::microseconds(500), std::chrono::milliseconds(20));
}

asio::awaitable<bool> awaitCacheShows(const cache::Clock& clock, const WriteExpectation& expected,
                                      const cache::ThreadSafeStore& store, cache::Clock::TimePoint deadline) {
  co_return co_await awaitStore(clock, [&expected, &store] { return satisfiedBy(expected, store); }, deadline,
                                std::chrono::microseconds(200), std::chrono::milliseconds(2));
}

bool freshEnough(uint64_t state_rv, const watch::Freshness& freshness) {
  return state_rv >= freshness.revision || (freshness.state_rv != 0 && state_rv == freshness.state_rv);
}

asio::awaitable<std::optional<watch::Freshness>> proveFresh(CacheContext& ctx, const watch::CachedResource& cached,
                                                            std::string_view ns, const std::string& collection,
                                                            FreshnessNeed need) {
  // While the upstream is down nothing can be proven: the caller passes through (and
  // fails fast with a 503) or keeps the apiserver's own wait (docs/routing.md).
  if (const auto* health = ctx.pool.upstream().health(); health && !health->up()) co_return std::nullopt;
  const cache::ThreadSafeStore& store = cached.store();
  if (!need.arrived) {
    const uint64_t at = store.currentRV();
    if (at >= need.min_rv) co_return watch::Freshness{at, 0};
    if (const uint64_t proven = cached.freshness().provenAt(ns, at); proven >= need.min_rv) {
      co_return watch::Freshness{proven, at};
    }
  }
  watch::ProbeFlights& flights = cached.probes();
  const std::string scope(ns);
  const auto deadline = cached.clock().now() + 2 * kProbeTimeout;
  while (true) {
    auto seat = flights.join(scope, need.arrived);
    if (!seat.flight) {
      // The probe in flight left before this request arrived: wait for it, then the next.
      if (auto current = flights.current(scope)) {
        // Named, not a temporary in the co_await: GCC 12 destroyed an owning lambda
        // temporary there twice (ASan: the flight freed while another waiter polled it).
        const std::function<bool()> landed = [flight = current.get()] { return flight->landed(); };
        co_await awaitStore(cached.clock(), landed, deadline, 200us, 2ms);
      }
      if (cached.clock().now() >= deadline) co_return std::nullopt;
      continue;
    }
    if (seat.leader) {
      Landing landing{flights, scope, seat.flight};
      if (auto last = flights.lastIssued(scope); last && cached.clock().now() < *last + kProbeSpacing) {
        asio::steady_timer timer(co_await asio::this_coro::executor, *last + kProbeSpacing);
        co_await timer.async_wait(asio::use_awaitable);
      }
      flights.issue(scope, seat.flight);
      landing.land(co_await runProbe(ctx, cached, ns, collection));
    } else if (const std::function<bool()> landed = [flight = seat.flight.get()] { return flight->landed(); };
               !co_await awaitStore(cached.clock(), landed, deadline, 200us, 2ms)) {
      co_return std::nullopt;
    } else {
      ctx.metrics.freshnessProbeShared(cached.resource().displayName());
    }
    const auto& result = seat.flight->result();
    // Not fresh enough for this N: N may be beyond the upstream's revision, which only
    // the upstream can answer (R7).
    if (!result || result->revision < need.min_rv) co_return std::nullopt;
    co_return *result;
  }
}

}  // namespace proxy::io
