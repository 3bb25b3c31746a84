// GET and LIST answered from the cache: the event-loop side only (waiting, the upstream
// fence read, writing). The decisions are plain code with unit tests: read_route (cache
// or upstream), cached_list (which state, which page), list_writer (the bytes),
// read_status (the errors). docs/routing.md describes the whole path.
#include <algorithm>
#include <climits>
#include <optional>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/uio.h>

#include "cache/protobuf/protobuf_list.h"
#include "cache/query/query_values.h"
#include "cache/resource_version.h"
#include "proxy/answers.h"
#include "proxy/http/http1_stream.h"
#include "proxy/reads/cache_serving.h"
#include "proxy/reads/cached_list.h"
#include "proxy/http/gzip_writer.h"
#include "proxy/reads/list_writer.h"
#include "proxy/reads/partial_object_metadata.h"
#include "proxy/reads/read_route.h"
#include "proxy/reads/read_status.h"
#include "proxy/http/socket_io.h"
#include "proxy/status_negotiation.h"
#include "watch/cached_resource.h"
#include "watch/fanout/watch_dispatcher.h"
#include "watch/upstream_health.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

// The apiserver's blockTimeout for an RV the cache has not reached (R7), used while the
// upstream is down; otherwise the catch-up wait before such a read passes through.
constexpr auto kResourceVersionWait = std::chrono::seconds(3);
constexpr auto kResourceVersionCatchUp = std::chrono::milliseconds(50);
// Compressed bytes per HTTP chunk when streaming a gzipped list.
constexpr size_t kPieceBytes = 256 * 1024;
// Buffers handed to one sendmsg when streaming a list as it is stored (the kernel's
// limit; Asio's own gather writes stop at 64).
constexpr size_t kMaxSlices = IOV_MAX;

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kProtobuf = "application/vnd.kubernetes.protobuf";

HeaderList answerHeaders(uint64_t rv, std::string_view content_type) {
  return {{"Cache-Control", "no-cache, private"},
          {"Content-Type", std::string(content_type)},
          {kServedByHeader, fmt::format("cache; rv={}", rv)}};
}

GzipPolicy gzipPolicy(const CacheContext& ctx) { return {ctx.options.gateway, ctx.options.gzip_loopback}; }

asio::awaitable<ForwardOutcome> writeWhole(const Request& req, ServerStream& out, CacheContext& ctx, std::string body,
                                           uint64_t rv, const HeaderList& extra, std::string_view content_type) {
  ResponseHead head;
  head.headers = answerHeaders(rv, content_type);
  head.headers.insert(head.headers.end(), extra.begin(), extra.end());
  if (shouldGzip(body.size(), req.header("Accept-Encoding"), req.client_ip, gzipPolicy(ctx))) {
    std::string compressed;
    GzipWriter().write(body, compressed, true);
    body = std::move(compressed);
    head.headers.emplace_back("Content-Encoding", "gzip");
  }
  co_await out.writeWhole(std::move(head), body);
  co_return ForwardOutcome{200, false};
}

asio::awaitable<ForwardOutcome> writeStatus(const Request& req, ServerStream& out, const Status& status, uint64_t rv,
                                            HeaderList extra = {}) {
  extra.emplace_back(kServedByHeader, fmt::format("cache; rv={}", rv));
  co_return ForwardOutcome{co_await io::writeStatus(out, req, status, std::move(extra)), false};
}

// Streams a list: Content-Length when sent as is, gathered from the stored bytes;
// streamed pieces when gzipped (N1).
asio::awaitable<ForwardOutcome> writeList(const Request& req, ServerStream& out, CacheContext& ctx, ListWriter& writer,
                                          uint64_t rv, const HeaderList& extra, std::string_view content_type) {
  const bool gzip = !(out.protocol() == Protocol::Http1 && static_cast<Http1Stream&>(out).http10()) &&
                    shouldGzip(writer.totalSize(), req.header("Accept-Encoding"), req.client_ip, gzipPolicy(ctx));
  ResponseHead head;
  head.headers = answerHeaders(rv, content_type);
  head.headers.insert(head.headers.end(), extra.begin(), extra.end());
  if (!gzip) {
    head.content_length = writer.totalSize();
    co_await out.writeHead(std::move(head));
    std::vector<std::string_view> slices;
    slices.reserve(kMaxSlices);
    while (writer.nextSlices(slices, kMaxSlices)) {
      co_await out.writeBody(slices);
      slices.clear();
    }
    co_return ForwardOutcome{200, false};
  }
  head.headers.emplace_back("Content-Encoding", "gzip");
  co_await out.writeHead(std::move(head));
  GzipWriter gz;
  std::string compressed;
  while (writer.nextGzip(gz, compressed, kPieceBytes)) {
    if (!compressed.empty()) co_await out.writeBody(compressed);
  }
  co_await out.endBody();
  co_return ForwardOutcome{200, false};
}

// The `cache` read policy (--read-policy, per resource in the config file): RV-unset reads
// answered from the cache at once, as controller-runtime's cached client reads.
bool readsAtOnce(const ServerOptions& options, const watch::ApiResource& resource) {
  if (!options.read_from_cache && options.read_from_cache_resources.empty()) return false;
  auto it = options.read_from_cache_resources.find(resource.displayName());
  return it == options.read_from_cache_resources.end() ? options.read_from_cache : it->second;
}

// What a read under the `cache` policy tells its client: at most how many seconds old
// the cache's knowledge is (since an upstream event or bookmark, or a freshness probe).
HeaderList stalenessHeaders(const watch::CachedResource& cached) {
  const auto known = std::max(cached.dispatcher().lastUpdate(), cached.freshness().lastProven());
  const double seconds = std::chrono::duration<double>(cached.clock().now() - known).count();
  return {{kStalenessHeader, fmt::format("{:.3f}", std::max(0.0, seconds))}};
}

// Whether a read that needs more than the store's RV can be answered from the cache.
struct ReadFreshness {
  enum class Verdict { Serve, PassThrough, TooLarge };
  Verdict verdict = Verdict::Serve;
  std::optional<watch::Freshness> proof;  // what the read's state must be covered by
};

asio::awaitable<ReadFreshness> freshForRead(CacheContext& ctx, const watch::CachedResource& cached,
                                            std::string_view ns, const std::string& collection, FreshnessNeed need) {
  const cache::ThreadSafeStore& store = cached.store();
  if (!need.arrived && store.currentRV() >= need.min_rv) co_return ReadFreshness{};
  const auto* health = ctx.pool.upstream().health();
  if (health && !health->up()) {
    // Nothing can pass through: a consistent read fails fast with the 503 (docs/routing.md,
    // "Upstream outage"); an RV=N read keeps the apiserver's 3 s wait and 504 (R7).
    if (need.arrived) co_return ReadFreshness{ReadFreshness::Verdict::PassThrough, std::nullopt};
    if (co_await awaitResourceVersionOrPassThrough(ctx, store, need.min_rv) == ResourceVersionWait::Reached) {
      co_return ReadFreshness{};
    }
    co_return ReadFreshness{ReadFreshness::Verdict::TooLarge, std::nullopt};
  }
  auto proof = co_await proveFresh(ctx, cached, ns, collection, need);
  if (!proof) {
    ctx.metrics.cachePassThrough(cached.resource().displayName(), "unproven");
    co_return ReadFreshness{ReadFreshness::Verdict::PassThrough, std::nullopt};
  }
  co_return ReadFreshness{ReadFreshness::Verdict::Serve, proof};
}

// A list read the plan could not take straight from the current state: the state it
// read, or why it did not.
struct ListRead {
  enum class Outcome { Read, PassThrough, TooLarge };
  Outcome outcome = Outcome::Read;
  std::optional<ListResult> result;
};

ListRead passThroughRead(ProxyMetrics& metrics, const watch::ApiResource& resource, const char* why) {
  metrics.cachePassThrough(resource.displayName(), why);
  return ListRead{ListRead::Outcome::PassThrough, std::nullopt};
}

// RV unset (C1) or NotOlderThan N (R3): the current state once proven fresh enough.
asio::awaitable<ListRead> readProven(CacheContext& ctx, const Request& req, const watch::CachedResource& cached,
                                     const cache::ListOptions& options, std::string_view ns, const ListPlan& plan) {
  FreshnessNeed need;
  if (plan.read == ListPlan::Read::Consistent) {
    need.arrived = ctx.clock.now();
  } else {
    need.min_rv = plan.rv;
  }
  need.lists_scope = true;
  if (options.shard_selector) need.shard = &*options.shard_selector;
  const ReadFreshness fresh = co_await freshForRead(ctx, cached, ns, collectionPath(req.info, ns), need);
  if (fresh.verdict == ReadFreshness::Verdict::PassThrough) co_return ListRead{ListRead::Outcome::PassThrough};
  if (fresh.verdict == ReadFreshness::Verdict::TooLarge) co_return ListRead{ListRead::Outcome::TooLarge};
  ListResult result = listCurrent(cached.store(), options, ns, plan);
  if (fresh.proof) {
    // The store moved between the proof and this read to a state it does not cover.
    if (!freshEnough(result.resource_version, *fresh.proof)) {
      co_return passThroughRead(ctx.metrics, cached.resource(), "raced");
    }
    // The state is the upstream's at the proven revision: say so, as the apiserver's list
    // RV would. A page of it would need a continue token at that revision, which the store
    // cannot serve: such a read passes through.
    if (result.resource_version < fresh.proof->revision) {
      if (!result.continue_token.empty()) co_return passThroughRead(ctx.metrics, cached.resource(), "paged-proof");
      result.resource_version = fresh.proof->revision;
    }
  }
  co_return ListRead{ListRead::Outcome::Read, std::move(result)};
}

// Exact N (R3, P7).
asio::awaitable<ListRead> readExact(CacheContext& ctx, const watch::CachedResource& cached,
                                    const cache::ListOptions& options, std::string_view ns, const ListPlan& plan) {
  const cache::ThreadSafeStore& store = cached.store();
  // Exactly the revision a freshness proof showed the current state to be the upstream's at
  // (client-go's consistency detector lists at the initial-events-end bookmark's RV): that
  // state, unpaged. Other revisions beyond the store: below.
  if (const auto current = store.snapshot(); current->resourceVersion() < plan.rv &&
      cached.freshness().provenAt(ns, current->resourceVersion()) == plan.rv && plan.start_key.empty()) {
    ListResult result = listSnapshot(*current, options, ns, plan);
    if (result.continue_token.empty()) {
      result.resource_version = plan.rv;
      co_return ListRead{ListRead::Outcome::Read, std::move(result)};
    }
  }
  switch (co_await awaitResourceVersionOrPassThrough(ctx, store, plan.rv)) {
    case ResourceVersionWait::Reached: break;
    case ResourceVersionWait::PassThrough: co_return ListRead{ListRead::Outcome::PassThrough};
    case ResourceVersionWait::TooLarge: co_return ListRead{ListRead::Outcome::TooLarge};
  }
  // Outside the history window: the upstream may still serve it from etcd, and otherwise
  // answers with its own 410 (R8, P7 with the fresh token).
  auto snapshot = store.snapshotAt(plan.rv);
  if (!snapshot) co_return ListRead{ListRead::Outcome::PassThrough};
  co_return ListRead{ListRead::Outcome::Read, listSnapshot(**snapshot, options, ns, plan)};
}

asio::awaitable<std::optional<ForwardOutcome>> serveList(const Request& req, ServerStream& out, CacheContext& ctx,
                                                         const watch::CachedResource& cached, const ReadRoute& route) {
  const watch::ApiResource& resource = cached.resource();
  const cache::ThreadSafeStore& store = cached.store();
  auto parsed = cache::ListOptions::parse(req.query, *resource.field_spec);
  if (!parsed) co_return co_await writeStatus(req, out, parsed.error(), store.currentRV());
  cache::ListOptions& options = parsed.value();
  const std::string_view ns = storeNamespace(req.info, resource);
  const std::string collection = collectionPath(req.info, ns);
  const std::optional<std::string> shard = co_await shardOf(ctx, resource, collection, options);
  if (!shard) co_return std::nullopt;
  const ListPlan plan = planList(options, ns, resource.namespaced, resource.upstreamWatchCached());

  ListRead read;
  HeaderList extra;
  if (plan.read == ListPlan::Read::PassThrough) co_return std::nullopt;
  if (plan.read == ListPlan::Read::Current) {
    read.result = listCurrent(store, options, ns, plan);
  } else if (plan.read == ListPlan::Read::Consistent && readsAtOnce(ctx.options, resource)) {
    extra = stalenessHeaders(cached);
    read.result = listCurrent(store, options, ns, plan);
  } else if (plan.read == ListPlan::Read::Exact) {
    read = co_await readExact(ctx, cached, options, ns, plan);
  } else {
    read = co_await readProven(ctx, req, cached, options, ns, plan);
  }
  if (read.outcome == ListRead::Outcome::PassThrough) co_return std::nullopt;
  if (read.outcome == ListRead::Outcome::TooLarge) {
    const Status too_large = tooLargeResourceVersionStatus(plan.rv, store.currentRV());
    co_return co_await writeStatus(req, out, too_large, store.currentRV());
  }
  std::optional<ListResult>& result = read.result;
  auto [envelope, form] = listShape(resource, route.format);
  envelope.resource_version = result->resource_version;
  envelope.continue_token = std::move(result->continue_token);
  envelope.remaining_item_count = result->remaining_item_count;
  if (form == ItemForm::WithoutTypeMeta || form == ItemForm::Protobuf) envelope.shard_selector = *shard;
  ListWriter writer(std::move(envelope), std::move(result->items), form, std::move(result->whole_chunks));
  co_return co_await writeList(req, out, ctx, writer, result->resource_version, extra,
                               isProtobuf(route.format) ? kProtobuf : kJson);
}

asio::awaitable<std::optional<ForwardOutcome>> serveGet(const Request& req, ServerStream& out, CacheContext& ctx,
                                                        const watch::CachedResource& cached, const ReadRoute& route) {
  const watch::ApiResource& resource = cached.resource();
  const cache::ThreadSafeStore& store = cached.store();
  const std::string_view ns = storeNamespace(req.info, resource);
  const std::optional<std::string_view> rv_param = req.query.get("resourceVersion");
  std::optional<FreshnessNeed> need;
  if (!rv_param || rv_param->empty()) {
    // RV unset is a quorum read upstream (R2): served only when proven fresh (C1).
    need = FreshnessNeed{ctx.clock.now(), 0};
  } else {
    const auto rv = cache::ResourceVersion::parse(*rv_param);
    if (!rv) co_return std::nullopt;  // R6: the upstream's own quirky answer
    if (!rv->isZero()) need = FreshnessNeed{std::nullopt, rv->value()};
  }
  std::optional<watch::Freshness> proof;
  HeaderList extra;
  if (need && need->arrived && readsAtOnce(ctx.options, resource)) {
    extra = stalenessHeaders(cached);
    need.reset();
  }
  if (need) {
    const ReadFreshness fresh = co_await freshForRead(ctx, cached, ns, collectionPath(req.info, ns), *need);
    if (fresh.verdict == ReadFreshness::Verdict::PassThrough) co_return std::nullopt;
    if (fresh.verdict == ReadFreshness::Verdict::TooLarge) {
      const Status too_large = tooLargeResourceVersionStatus(need->min_rv, store.currentRV());
      co_return co_await writeStatus(req, out, too_large, store.currentRV());
    }
    proof = fresh.proof;
  }
  // An RV that did not move across the lookup names the state the object was read from.
  uint64_t at = 0;
  cache::ObjectConstSharedPtr object;
  for (int attempt = 0;; ++attempt) {
    at = store.currentRV();
    object = store.get(cache::makeKey(ns, req.info.name));
    if (store.currentRV() == at) break;
    if (attempt == 3) {
      if (proof) co_return std::nullopt;
      break;
    }
  }
  if (proof && !freshEnough(at, *proof)) {
    ctx.metrics.cachePassThrough(resource.displayName(), "raced");
    co_return std::nullopt;
  }
  // A proven state is the upstream's at the proven revision.
  if (proof) at = std::max(at, proof->revision);
  if (!object) {
    const Status not_found = notFoundStatus(resource, req.info.name);
    co_return co_await writeStatus(req, out, not_found, at, extra);
  }
  // A packed object (--store-encoding compressed) is unpacked into this request's own
  // buffers, never into the instance the store shares.
  std::string body;
  std::string buffer;
  if (route.format == ReadFormat::Protobuf) {
    cache::protobuf::appendEnvelope(body, resource.apiVersion(), resource.kind, object->bytes(buffer));
  } else if (route.format == ReadFormat::ProtobufPartialObjectMetadata) {
    cache::protobuf::appendPartialObjectMetadata(body, object->metadataBytes(buffer));
  } else if (route.format == ReadFormat::PartialObjectMetadata) {
    body = partialObjectMetadata(*object, resource.custom);
  } else {
    body.reserve(object->byteSize() + 1);
    object->appendBytes(body);
    body += '\n';  // Go's encoder ends every body with a newline
  }
  co_return co_await writeWhole(req, out, ctx, std::move(body), at, extra, isProtobuf(route.format) ? kProtobuf : kJson);
}

}  // namespace

std::string collectionPath(const RequestInfo& info, std::string_view ns) {
  return watch::collectionPath(info.api_group, info.api_version, info.resource, ns);
}

asio::awaitable<ResourceVersionWait> awaitResourceVersionOrPassThrough(CacheContext& ctx,
                                                                       const cache::ThreadSafeStore& store,
                                                                       uint64_t rv) {
  const auto* health = ctx.pool.upstream().health();
  const bool upstream_down = health && !health->up();
  const auto wait = upstream_down ? std::chrono::duration_cast<std::chrono::milliseconds>(kResourceVersionWait)
                                  : kResourceVersionCatchUp;
  if (co_await awaitResourceVersion(ctx.clock, store, rv, ctx.clock.now() + wait, &ctx.client)) {
    co_return ResourceVersionWait::Reached;
  }
  co_return upstream_down ? ResourceVersionWait::TooLarge : ResourceVersionWait::PassThrough;
}

asio::awaitable<std::optional<ForwardOutcome>> serveCachedRead(const Request& req, ServerStream& out, CacheContext& ctx) {
  if (req.method != "GET") co_return std::nullopt;  // HEAD and friends pass through
  const RequestInfo& info = req.info;
  const bool is_list = info.verb == "list";
  // GET /api/v1/namespaces/<n> is the cluster-scoped namespace object <n>.
  // GET /api/v1/namespaces/<n> is the cluster-scoped namespace object <n>; the nested
  // /api/v1/namespaces/<a>/namespaces/<b> is no route of the apiserver's (404).
  const bool namespace_object =
      !is_list && info.api_group.empty() && info.resource == "namespaces" && info.namespace_ == info.name;
  const std::string_view scope = namespace_object ? "" : std::string_view(info.namespace_);
  auto route_with = [&](const std::shared_ptr<watch::CachedResource>& candidate) {
    CachedFacts facts;
    if (candidate) {
      facts.resource = &candidate->resource();
      facts.synced = candidate->hasSynced();
      facts.namespace_scope = candidate->namespaceScope();
      facts.encoding = candidate->encoding();
    }
    return routeRead(req, facts);
  };
  // The apiserver's answer is protobuf: the protobuf cache answers it (and is started on
  // demand by this lookup); while it syncs, a JSON cache answers a client that also
  // accepts JSON, as before there was one.
  // A JSON cache is not started for such a client: it would be a second upstream watch.
  std::shared_ptr<watch::CachedResource> cached;
  std::optional<ReadRoute> chosen;
  const bool protobuf = prefersProtobuf(req.accept, is_list) &&
                        ctx.registry.cacheableInProtobuf(info.api_group, info.api_version, info.resource);
  auto choose = [&] {
    chosen.reset();
    if (protobuf) {
      cached = ctx.registry.find(info.api_group, info.api_version, info.resource, scope, cache::Encoding::Protobuf);
      if (cached) {
        const ReadRoute route = route_with(cached);
        if (route.from_cache) chosen = route;
      }
    }
    if (!chosen) {
      cached = protobuf ? ctx.registry.findRunning(info.api_group, info.api_version, info.resource, scope)
                        : ctx.registry.find(info.api_group, info.api_version, info.resource, scope);
      chosen = route_with(cached);
    }
  };
  choose();
  // --cache-start-wait: a cache that is starting answers once synced, as the apiserver holds
  // requests until its watch cache is ready.
  const auto encoding = protobuf ? cache::Encoding::Protobuf : cache::Encoding::Json;
  auto starting = [&] { return ctx.registry.starting(info.api_group, info.api_version, info.resource, scope, encoding); };
  if (!chosen->from_cache && ctx.options.cache_start_wait.count() > 0 && starting()) {
    // Woken when an informer starts or stops, or the one found moves (syncs). Each store
    // subscribed to is held until the wait ends: choose() may drop the one found (its
    // informer stopped) while the subscription to its signal is still live.
    std::vector<std::shared_ptr<watch::CachedResource>> subscribed;
    const std::function<ChangeSignals()> signals = [&] {
      if (cached) subscribed.push_back(cached);
      return ChangeSignals{ctx.registry.informersChanged(), cached ? &cached->store().changes() : nullptr};
    };
    const std::function<bool()> settled = [&] { return choose(), chosen->from_cache || !starting(); };
    co_await awaitChange(ctx.clock, settled, signals, ctx.clock.now() + ctx.options.cache_start_wait, &ctx.client);
  }
  // A cluster-scoped resource under a namespace path: the apiserver has no such route and
  // answers 404 itself; the cache must not answer it as the cluster-wide collection.
  if (cached && !cached->resource().namespaced && !info.namespace_.empty() && !namespace_object) co_return std::nullopt;
  const ReadRoute& route = *chosen;
  if (!route.from_cache) {
    if (cached) spdlog::debug("{} {} passes through: {}", req.method, req.target, route.why);
    co_return std::nullopt;
  }
  cached->markUsed();
  if (is_list) co_return co_await serveList(req, out, ctx, *cached, route);
  co_return co_await serveGet(req, out, ctx, *cached, route);
}

}  // namespace proxy::io
