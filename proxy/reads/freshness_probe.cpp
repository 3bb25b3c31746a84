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

#include <functional>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <spdlog/spdlog.h>

#include "cache/metadata_list.h"
#include "cache/protobuf/protobuf_metadata_list.h"
#include "proxy/reads/cache_serving.h"
#include "proxy/observability/proxy_metrics.h"
#include "proxy/passthrough/write_sync.h"
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
// Scopes with more objects are proven by metadata only for a read that lists the scope
// (the metadata list costs the upstream less than the list it saves: a tenth of the
// bytes, and no gzip); a GET's or a watch's consistent read of such a scope needs a busy
// store, else passes through (a direct GET costs the upstream less than the proof).
constexpr size_t kMaxProofObjects = 1000;
// A scope listed whole above this is proven by a fence only: one metadata list would
// hold 64 MiB (kMaxMetadataBody) at about 600 bytes an object.
constexpr size_t kMaxListProofObjects = 100000;
constexpr size_t kMaxFenceBody = 4 << 20;
constexpr size_t kMaxMetadataBody = 64 << 20;
// Protobuf first: kube-apiserver encodes 10,000 pods' metadata in 60 ms that way against
// 172 ms in JSON; JSON where protobuf is not served (custom resources).
constexpr const char* kMetadataAccept =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, "
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
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

// What a probe needs: all of it outlives the request that started the probe, which may
// leave while others wait for the probe to land.
struct ProbeContext {
  UpstreamPool& pool;
  const ServerOptions& options;
  ProxyMetrics& metrics;
};

asio::awaitable<std::optional<UpstreamReply>> ask(ProbeContext& ctx, const std::string& path, size_t max_body,
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
asio::awaitable<std::optional<uint64_t>> revisionFence(ProbeContext& ctx, const std::string& collection) {
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

asio::awaitable<std::optional<cache::MetadataList>> metadataList(ProbeContext& ctx, const std::string& collection) {
  const std::string accept = kMetadataAccept;
  auto reply = co_await ask(ctx, collection, kMaxMetadataBody, accept);
  if (!reply || reply->code != 200) co_return std::nullopt;
  const bool protobuf = findHeader(reply->headers, "Content-Type").starts_with("application/vnd.kubernetes.protobuf");
  auto parsed = protobuf ? cache::protobuf::parseMetadataList(reply->body) : cache::parseMetadataList(reply->body);
  if (!parsed || parsed->has_continue) co_return std::nullopt;
  co_return std::move(parsed).value();
}

// Waits until the store reaches `revision` or, with `listed`, holds exactly its objects
// (of `shard` only, when set: such a proof is the shard's, and is not recorded for the
// namespace).
asio::awaitable<std::optional<watch::Freshness>> settle(const watch::CachedResource& cached, std::string_view ns,
                                                        uint64_t revision, const cache::MetadataList* listed,
                                                        const cache::ShardSelector* shard) {
  const cache::ThreadSafeStore& store = cached.store();
  const auto deadline = cached.clock().now() + kProbeWait;
  while (true) {
    const uint64_t before = store.currentRV();
    bool reached = before >= revision;
    if (!reached && listed) {
      const auto snapshot = store.snapshot();
      reached = snapshot->resourceVersion() >= revision;
      if (!reached && cache::sameObjects(*snapshot, ns, *listed, shard)) {
        const watch::Freshness proof{revision, snapshot->resourceVersion()};
        if (!shard) cached.freshness().record(ns, proof);
        cached.freshness().noteProven();
        co_return proof;
      }
    }
    if (reached) {
      cached.freshness().noteProven();
      co_return watch::Freshness{revision, 0};
    }
    if (cached.clock().now() >= deadline) co_return std::nullopt;
    const bool moved = co_await awaitChange(cached.clock(), [&] { return store.currentRV() != before; },
                                            store.changes(), std::min(deadline, cached.clock().now() + kQuietWait));
    if (!moved) co_return std::nullopt;
  }
}

asio::awaitable<std::optional<watch::Freshness>> runProbe(ProbeContext& ctx, const watch::CachedResource& cached,
                                                          std::string_view ns, const std::string& collection,
                                                          bool lists_scope, const cache::ShardSelector* shard) {
  const auto snapshot = cached.store().snapshot();
  const size_t objects = cache::objectsInScope(*snapshot, ns, shard);
  const bool provable = objects <= (lists_scope ? kMaxListProofObjects : kMaxProofObjects);
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
    if (auto reached = co_await settle(cached, ns, *fence, nullptr, nullptr)) co_return finish(reached, "fence");
    if (!provable) co_return finish(std::nullopt, "");
  }
  // A shard's read is proven by the shard's metadata: 1/N of the scope's.
  const std::string listed_path =
      shard ? collection + "?shardSelector=" + cache::queryEscape(shard->canonical()) : collection;
  const auto listed = co_await metadataList(ctx, listed_path);
  if (!listed) co_return finish(std::nullopt, "");
  auto result = co_await settle(cached, ns, listed->resource_version, &*listed, shard);
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

// The leader's probe, on its own: a leader whose client leaves does not take the probe
// away from the reads that joined it. It holds the resource until it lands (at most
// about kProbeTimeout plus kProbeWait).
asio::awaitable<void> leadProbe(ProbeContext ctx, std::shared_ptr<const watch::CachedResource> cached,
                                std::string scope, std::string ns, std::string collection, bool lists_scope,
                                std::optional<cache::ShardSelector> shard, watch::ProbeFlightPtr flight) {
  Landing landing{cached->probes(), scope, flight};
  const cache::ShardSelector* shard_scope = shard ? &*shard : nullptr;
  landing.land(co_await runProbe(ctx, *cached, ns, collection, lists_scope, shard_scope));
}

}  // namespace

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
  // A shard's reads share the shard's probe; '\n' is in no namespace name or selector.
  std::string scope(ns);
  if (need.shard) scope += "\n" + need.shard->canonical();
  const auto deadline = cached.clock().now() + 2 * kProbeTimeout;
  while (true) {
    auto seat = flights.join(scope, need.arrived);
    if (!seat.flight) {
      // The probe in flight left before this request arrived: wait for it, then the next.
      if (auto current = flights.current(scope)) {
        // Named, not a temporary in the co_await: GCC 12 destroyed an owning lambda
        // temporary there twice (ASan: the flight freed while another waiter polled it).
        const std::function<bool()> landed = [flight = current.get()] { return flight->landed(); };
        co_await awaitChange(cached.clock(), landed, current->landing(), deadline, &ctx.client);
      }
      if (ctx.client.gone || cached.clock().now() >= deadline) co_return std::nullopt;
      continue;
    }
    if (seat.leader) {
      // Group commit: a probe leaves at once (a lone client pays one round trip); reads
      // that arrive while it is in flight join the next, which leaves as soon as this one
      // lands, so the probes of a scope are one at a time and batch under load.
      flights.issue(seat.flight);
      std::shared_ptr<const watch::CachedResource> holder = cached.shared_from_this();
      std::string probe_collection = collection;
      std::string probe_ns(ns);
      std::optional<cache::ShardSelector> shard;
      if (need.shard) shard = *need.shard;
      asio::co_spawn(co_await asio::this_coro::executor,
                     leadProbe(ProbeContext{ctx.pool, ctx.options, ctx.metrics}, std::move(holder), scope,
                               std::move(probe_ns), std::move(probe_collection), need.lists_scope, std::move(shard),
                               seat.flight),
                     asio::detached);
    }
    // Every read, the leader's too, waits for the probe to land, and stops waiting when
    // its client leaves.
    const std::function<bool()> landed = [flight = seat.flight.get()] { return flight->landed(); };
    if (!co_await awaitChange(cached.clock(), landed, seat.flight->landing(), deadline, &ctx.client)) {
      co_return std::nullopt;
    }
    if (!seat.leader) ctx.metrics.freshnessProbeShared(cached.resource().displayName());
    const auto& result = seat.flight->result();
    // Not fresh enough for this N: N may be beyond the upstream's revision, which only
    // the upstream can answer (R7).
    if (!result || result->revision < need.min_rv) co_return std::nullopt;
    co_return *result;
  }
}

}  // namespace proxy::io
