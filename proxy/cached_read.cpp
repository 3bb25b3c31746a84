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

#include "cache/protobuf_list.h"
#include "cache/query_values.h"
#include "cache/resource_version.h"
#include "proxy/answers.h"
#include "proxy/cache_serving.h"
#include "proxy/cached_list.h"
#include "proxy/gzip_writer.h"
#include "proxy/list_writer.h"
#include "proxy/partial_object_metadata.h"
#include "proxy/read_route.h"
#include "proxy/read_status.h"
#include "proxy/socket_io.h"
#include "proxy/status_negotiation.h"
#include "watch/cached_resource.h"
#include "watch/watch_dispatcher.h"
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

bool keepConnection(const DownstreamRequest& req, const CacheContext& ctx) {
  return req.keep_alive && req.parser.is_done() && !ctx.control.stopping;
}

// `may_gzip` is false for what the apiserver writes past its serializer (WriteRawJSON),
// which never compresses.
asio::awaitable<ForwardOutcome> writeWhole(DownstreamRequest& req, CacheContext& ctx, unsigned code, std::string body,
                                           uint64_t rv, int retry_after_seconds = 0, bool may_gzip = true,
                                           const HeaderList& extra = {}, std::string_view content_type = kJson) {
  const bool keep = keepConnection(req, ctx);
  HeaderList headers = answerHeaders(rv, content_type);
  headers.insert(headers.end(), extra.begin(), extra.end());
  if (retry_after_seconds > 0) headers.emplace_back("Retry-After", std::to_string(retry_after_seconds));
  if (may_gzip && shouldGzip(body.size(), findHeader(req.headers, "Accept-Encoding"), req.client_ip, gzipPolicy(ctx))) {
    std::string compressed;
    GzipWriter().write(body, compressed, true);
    body = std::move(compressed);
    headers.emplace_back("Content-Encoding", "gzip");
  }
  std::string out = formatResponseHead(code, "", headers, BodyFraming::ContentLength, body.size(), keep);
  out += body;
  co_await writeDownstream(req.stream, out, ctx.options.write_timeout);
  co_return ForwardOutcome{code, keep, false};
}

asio::awaitable<ForwardOutcome> writeStatus(DownstreamRequest& req, CacheContext& ctx, const Status& status,
                                            uint64_t rv, const HeaderList& extra = {}) {
  const StatusEncoding encoding = statusEncodingFor(findHeader(req.headers, "Accept"));
  HttpAnswer answer = toHttpAnswer(status, encoding);
  co_return co_await writeWhole(req, ctx, answer.code, std::move(answer.body), rv, answer.retry_after_seconds,
                                encoding != StatusEncoding::RawJson, extra, answer.content_type);
}

// Writes every byte of `slices` to the client with sendmsg (sendSome), up to kMaxSlices
// buffers per call, straight from where the bytes are (no copy in user space); when the
// kernel's send buffer is full, one Asio write of the next bytes waits for room (bounded
// by `timeout`) and the loop goes on. Throws on failure.
asio::awaitable<void> gatherWrite(DownstreamStream& downstream, const std::vector<std::string_view>& slices,
                                  std::chrono::milliseconds timeout) {
  if (downstream.directDescriptor() < 0) {
    // TLS encrypts in user space anyway, an HTTP/2 stream frames: one buffer-sequence write.
    std::vector<asio::const_buffer> buffers;
    buffers.reserve(slices.size());
    for (std::string_view s : slices) buffers.push_back(asio::buffer(s.data(), s.size()));
    downstream.expires_after(timeout);
    co_await asio::async_write(downstream, buffers, use_awaitable);
    downstream.expires_never();
    co_return;
  }
  TcpStream& stream = downstream.tcp();
  std::vector<iovec> iov;
  iov.reserve(std::min(slices.size(), kMaxSlices));
  size_t first = 0;   // the first slice not completely written
  size_t offset = 0;  // bytes of slices[first] already written
  while (true) {
    while (first < slices.size() && slices[first].size() == offset) {  // done or empty slices
      ++first;
      offset = 0;
    }
    if (first == slices.size()) break;
    iov.clear();
    for (size_t i = first; i < slices.size() && iov.size() < kMaxSlices; ++i) {
      const std::string_view s = i == first ? slices[i].substr(offset) : slices[i];
      iov.push_back(iovec{const_cast<char*>(s.data()), s.size()});
    }
    error_code ec;
    size_t sent = sendSome(downstream.directDescriptor(), iov, ec);
    if (ec) throw boost::system::system_error(ec);
    downstream.countWritten(sent);
    if (sent == 0) {  // the send buffer is full: wait for room
      stream.expires_after(timeout);
      sent = co_await stream.async_write_some(
          asio::buffer(slices[first].data() + offset, slices[first].size() - offset), use_awaitable);
      stream.expires_never();
    }
    // Advance past what was sent.
    size_t n = sent;
    while (n > 0) {
      const size_t left = slices[first].size() - offset;
      if (n < left) {
        offset += n;
        break;
      }
      n -= left;
      ++first;
      offset = 0;
    }
  }
}

// Streams a list: Content-Length when sent as is, gathered from the stored bytes;
// chunked pieces when gzipped (N1).
asio::awaitable<ForwardOutcome> writeList(DownstreamRequest& req, CacheContext& ctx, ListWriter& writer, uint64_t rv,
                                          const HeaderList& extra, std::string_view content_type) {
  const bool keep = keepConnection(req, ctx);
  const auto timeout = ctx.options.write_timeout;
  const bool gzip = !req.http10 && shouldGzip(writer.totalSize(), findHeader(req.headers, "Accept-Encoding"),
                                              req.client_ip, gzipPolicy(ctx));
  HeaderList headers = answerHeaders(rv, content_type);
  headers.insert(headers.end(), extra.begin(), extra.end());
  if (!gzip) {
    const std::string head = formatResponseHead(200, "", headers, BodyFraming::ContentLength, writer.totalSize(), keep);
    std::vector<std::string_view> slices;
    slices.reserve(kMaxSlices);
    slices.push_back(head);  // the head and the first items in one call
    while (writer.nextSlices(slices, kMaxSlices)) {
      co_await gatherWrite(req.stream, slices, timeout);
      slices.clear();
    }
    co_return ForwardOutcome{200, keep, false};
  }
  headers.emplace_back("Content-Encoding", "gzip");
  co_await writeDownstream(req.stream, formatResponseHead(200, "", headers, BodyFraming::Chunked, 0, keep), timeout);
  GzipWriter gz;
  std::string compressed;
  while (writer.nextGzip(gz, compressed, kPieceBytes)) {
    if (compressed.empty()) continue;
    std::string chunk = fmt::format("{:x}\r\n", compressed.size());
    chunk += compressed;
    chunk += "\r\n";
    co_await writeDownstream(req.stream, chunk, timeout);
  }
  co_await writeDownstream(req.stream, "0\r\n\r\n", timeout);
  co_return ForwardOutcome{200, keep, false};
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

asio::awaitable<std::optional<ForwardOutcome>> serveList(DownstreamRequest& req, CacheContext& ctx,
                                                         const watch::CachedResource& cached, const ReadRoute& route,
                                                         std::string_view raw_query) {
  const watch::ApiResource& resource = cached.resource();
  const cache::ThreadSafeStore& store = cached.store();
  const auto parsed = cache::ListOptions::parse(raw_query, *resource.field_spec);
  if (!parsed) co_return co_await writeStatus(req, ctx, parsed.error(), store.currentRV());
  const cache::ListOptions& options = *parsed;
  const std::string_view ns = storeNamespace(req.info, resource);
  const ListPlan plan = planList(options, ns, resource.namespaced, resource.upstreamWatchCached());

  std::optional<ListResult> result;
  HeaderList extra;
  switch (plan.read) {
    case ListPlan::Read::PassThrough: co_return std::nullopt;
    case ListPlan::Read::Current: result = listCurrent(store, options, ns, plan); break;
    case ListPlan::Read::Consistent:
      if (readsAtOnce(ctx.options, resource)) {
        extra = stalenessHeaders(cached);
        result = listCurrent(store, options, ns, plan);
        break;
      }
      [[fallthrough]];
    case ListPlan::Read::NotOlderThan: {
      FreshnessNeed need;
      if (plan.read == ListPlan::Read::Consistent) {
        need.arrived = ctx.clock.now();
      } else {
        need.min_rv = plan.rv;
      }
      const ReadFreshness fresh = co_await freshForRead(ctx, cached, ns, collectionPath(req.info, ns), need);
      if (fresh.verdict == ReadFreshness::Verdict::PassThrough) co_return std::nullopt;
      if (fresh.verdict == ReadFreshness::Verdict::TooLarge) {
        co_return co_await writeStatus(req, ctx, tooLargeResourceVersionStatus(plan.rv, store.currentRV()),
                                       store.currentRV());
      }
      result = listCurrent(store, options, ns, plan);
      if (fresh.proof) {
        // The store moved between the proof and this read to a state it does not cover.
        if (!freshEnough(result->resource_version, *fresh.proof)) {
          ctx.metrics.cachePassThrough(resource.displayName(), "raced");
          co_return std::nullopt;
        }
        // The state is the upstream's at the proven revision: say so, as the apiserver's
        // list RV would. A page of it would need a continue token at that revision, which
        // the store cannot serve: such a read passes through.
        if (result->resource_version < fresh.proof->revision) {
          if (!result->continue_token.empty()) {
            ctx.metrics.cachePassThrough(resource.displayName(), "paged-proof");
            co_return std::nullopt;
          }
          result->resource_version = fresh.proof->revision;
        }
      }
      break;
    }
    case ListPlan::Read::Exact: {
      // Exactly the revision a freshness proof showed the current state to be the
      // upstream's at (client-go's consistency detector lists at the initial-events-end
      // bookmark's RV): that state, unpaged. Other revisions beyond the store: below.
      if (const auto current = store.snapshot(); current->resourceVersion() < plan.rv &&
          cached.freshness().provenAt(ns, current->resourceVersion()) == plan.rv && plan.start_key.empty()) {
        result = listSnapshot(*current, options, ns, plan);
        if (result->continue_token.empty()) {
          result->resource_version = plan.rv;
          break;
        }
        result.reset();
      }
      switch (co_await awaitResourceVersionOrPassThrough(ctx, store, plan.rv)) {
        case ResourceVersionWait::Reached: break;
        case ResourceVersionWait::PassThrough: co_return std::nullopt;
        case ResourceVersionWait::TooLarge:
          co_return co_await writeStatus(req, ctx, tooLargeResourceVersionStatus(plan.rv, store.currentRV()),
                                         store.currentRV());
      }
      auto snapshot = store.snapshotAt(plan.rv);
      // Outside the history window: the upstream may still serve it from etcd, and
      // otherwise answers with its own 410 (R8, P7 with the fresh token).
      if (!snapshot) co_return std::nullopt;
      result = listSnapshot(**snapshot, options, ns, plan);
      break;
    }
  }

  auto [envelope, form] = listShape(resource, route.format);
  envelope.resource_version = result->resource_version;
  envelope.continue_token = std::move(result->continue_token);
  envelope.remaining_item_count = result->remaining_item_count;
  ListWriter writer(std::move(envelope), std::move(result->items), form, std::move(result->whole_chunks));
  co_return co_await writeList(req, ctx, writer, result->resource_version, extra,
                               isProtobuf(route.format) ? kProtobuf : kJson);
}

asio::awaitable<std::optional<ForwardOutcome>> serveGet(DownstreamRequest& req, CacheContext& ctx,
                                                        const watch::CachedResource& cached, const ReadRoute& route,
                                                        const cache::QueryValues& query) {
  const watch::ApiResource& resource = cached.resource();
  const cache::ThreadSafeStore& store = cached.store();
  const std::string_view ns = storeNamespace(req.info, resource);
  const std::optional<std::string_view> rv_param = query.get("resourceVersion");
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
      co_return co_await writeStatus(req, ctx, tooLargeResourceVersionStatus(need->min_rv, store.currentRV()),
                                     store.currentRV());
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
  if (!object) co_return co_await writeStatus(req, ctx, notFoundStatus(resource, req.info.name), at, extra);
  std::string body;
  if (route.format == ReadFormat::Protobuf) {
    cache::protobuf::appendEnvelope(body, resource.apiVersion(), resource.kind, object->bytes());
  } else if (route.format == ReadFormat::ProtobufPartialObjectMetadata) {
    cache::protobuf::appendPartialObjectMetadata(body, object->metadataBytes());
  } else if (route.format == ReadFormat::PartialObjectMetadata) {
    body = partialObjectMetadata(*object, resource.custom);
  } else {
    body.reserve(object->bytes().size() + 1);
    body += object->bytes();
    body += '\n';  // Go's encoder ends every body with a newline
  }
  co_return co_await writeWhole(req, ctx, 200, std::move(body), at, 0, true, extra,
                                isProtobuf(route.format) ? kProtobuf : kJson);
}

}  // namespace

std::string collectionPath(const RequestInfo& info, std::string_view ns) {
  std::string path = "/" + info.api_prefix;
  if (!info.api_group.empty()) path += "/" + info.api_group;
  path += "/" + info.api_version;
  if (!ns.empty()) path += "/namespaces/" + std::string(ns);
  path += "/" + info.resource;
  return path;
}

asio::awaitable<ResourceVersionWait> awaitResourceVersionOrPassThrough(CacheContext& ctx,
                                                                       const cache::ThreadSafeStore& store,
                                                                       uint64_t rv) {
  const auto* health = ctx.pool.upstream().health();
  const bool upstream_down = health && !health->up();
  const auto wait = upstream_down ? std::chrono::duration_cast<std::chrono::milliseconds>(kResourceVersionWait)
                                  : kResourceVersionCatchUp;
  if (co_await awaitResourceVersion(ctx.clock, store, rv, ctx.clock.now() + wait)) co_return ResourceVersionWait::Reached;
  co_return upstream_down ? ResourceVersionWait::TooLarge : ResourceVersionWait::PassThrough;
}

asio::awaitable<std::optional<ForwardOutcome>> serveCachedRead(DownstreamRequest& req, CacheContext& ctx) {
  if (req.method != "GET") co_return std::nullopt;  // HEAD and friends pass through
  const RequestInfo& info = req.info;
  const bool is_list = info.verb == "list";
  // GET /api/v1/namespaces/<n> is the cluster-scoped namespace object <n>.
  // GET /api/v1/namespaces/<n> is the cluster-scoped namespace object <n>; the nested
  // /api/v1/namespaces/<a>/namespaces/<b> is no route of the apiserver's (404).
  const bool namespace_object =
      !is_list && info.api_group.empty() && info.resource == "namespaces" && info.namespace_ == info.name;
  const std::string_view scope = namespace_object ? "" : std::string_view(info.namespace_);
  const std::string_view accept = findHeader(req.headers, "Accept");
  const size_t qmark = req.target.find('?');
  const std::string_view raw_query =
      qmark == std::string::npos ? std::string_view{} : std::string_view(req.target).substr(qmark + 1);
  const cache::QueryValues query = cache::QueryValues::parse(raw_query);
  auto route_with = [&](const std::shared_ptr<watch::CachedResource>& candidate) {
    CachedFacts facts;
    if (candidate) {
      facts.resource = &candidate->resource();
      facts.synced = candidate->hasSynced();
      facts.namespace_scope = candidate->namespaceScope();
      facts.encoding = candidate->encoding();
    }
    return routeRead(info, query, accept, findHeader(req.headers, "User-Agent"), facts);
  };
  // The apiserver's answer is protobuf: the protobuf cache answers it (and is started on
  // demand by this lookup); while it syncs, a JSON cache answers a client that also
  // accepts JSON, as before there was one.
  // A JSON cache is not started for such a client: it would be a second upstream watch.
  std::shared_ptr<watch::CachedResource> cached;
  std::optional<ReadRoute> chosen;
  const bool protobuf = prefersProtobuf(accept, is_list) &&
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
    co_await awaitStore(
        ctx.clock, [&] { return choose(), chosen->from_cache || !starting(); },
        ctx.clock.now() + ctx.options.cache_start_wait, std::chrono::milliseconds(5), std::chrono::milliseconds(50));
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
  if (is_list) co_return co_await serveList(req, ctx, *cached, route, raw_query);
  co_return co_await serveGet(req, ctx, *cached, route, query);
}

}  // namespace proxy::io
