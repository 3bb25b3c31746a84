// GET of a discovery document or /version answered from the DiscoveryCache
// (proxy/discovery_cache.h says when a document is valid): as the apiserver answered the
// same path and Accept, 304 for a matching If-None-Match, gzip past the apiserver's
// threshold. A missing or invalid document is fetched once for every request that wants
// it at the same time, with the proxy's credentials (discovery is the same for every
// caller; a gateway authorized the caller before). What cannot be answered passes through.

#include <array>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "proxy/cache_serving.h"
#include "proxy/discovery_cache.h"
#include "proxy/gzip_writer.h"
#include "proxy/read_route.h"
#include "proxy/upstream_failure.h"
#include "watch/cached_resource.h"

namespace proxy::io {
namespace {

bool answerIgnoresQuery(const std::string& target) {
  const size_t q = target.find('?');
  return q == std::string::npos || DiscoveryCache::answerIgnoresQuery(std::string_view(target).substr(q + 1));
}

constexpr auto kFetchTimeout = std::chrono::seconds(30);
// A discovery document of thousands of CRDs is a few MB; anything larger is not one.
constexpr size_t kMaxDocumentBytes = 64u << 20;

struct Input {
  std::string_view group, resource;
};
// What the documents are made of besides the apiserver's own types.
constexpr std::array<Input, 2> kInputs = {Input{"apiextensions.k8s.io", "customresourcedefinitions"},
                                          Input{"apiregistration.k8s.io", "apiservices"}};

// The cache of `input` that says its state: one already synced in either encoding (a
// client's own), else the protobuf one where the type has it, started on demand: Kubernetes'
// components, discovery's main readers, read these types in protobuf, so their informers and
// discovery share one upstream watch.
std::shared_ptr<watch::CachedResource> inputCache(watch::InformerRegistry& registry, const Input& input) {
  for (cache::Encoding encoding : {cache::Encoding::Protobuf, cache::Encoding::Json}) {
    auto cached = registry.findRunning(input.group, "v1", input.resource, "", encoding);
    if (cached && cached->hasSynced() && cached->namespaceScope().empty()) return cached;
  }
  const bool protobuf = registry.cacheableInProtobuf(input.group, "v1", input.resource);
  return registry.find(input.group, "v1", input.resource, "",
                       protobuf ? cache::Encoding::Protobuf : cache::Encoding::Json);
}

// The fingerprint of the CRDs' and APIServices' caches, or nullopt while either is not
// cached or not synced.
std::optional<uint64_t> discoveryInputs(watch::InformerRegistry& registry) {
  StateFingerprint fingerprint;
  for (const Input& input : kInputs) {
    std::shared_ptr<watch::CachedResource> cached = inputCache(registry, input);
    if (!cached || !cached->hasSynced() || !cached->namespaceScope().empty()) return std::nullopt;
    cached->markUsed();
    cached->store().snapshot()->forEach([&](const cache::ObjectConstSharedPtr& object) {
      fingerprint.add(object->key(), object->resourceVersion());
      return true;
    });
    fingerprint.add(input.resource, 0);  // where one cache's objects end
  }
  return fingerprint.value();
}

// Waits, as a cached read does (--cache-start-wait), for the inputs' informers to sync.
asio::awaitable<std::optional<uint64_t>> awaitInputs(CacheContext& ctx) {
  std::optional<uint64_t> fingerprint = discoveryInputs(ctx.registry);
  auto starting = [&] {
    for (const Input& input : kInputs) {
      for (cache::Encoding encoding : {cache::Encoding::Protobuf, cache::Encoding::Json}) {
        if (ctx.registry.starting(input.group, "v1", input.resource, "", encoding)) return true;
      }
    }
    return false;
  };
  if (!fingerprint && ctx.options.cache_start_wait.count() > 0 && starting()) {
    const bool synced = co_await awaitStore(
        ctx.clock, [&] { return (fingerprint = discoveryInputs(ctx.registry)).has_value() || !starting(); },
        ctx.clock.now() + ctx.options.cache_start_wait, std::chrono::milliseconds(5), std::chrono::milliseconds(50));
    (void)synced;  // `fingerprint` says
  }
  co_return fingerprint;
}

asio::awaitable<ForwardOutcome> writeDocument(DownstreamRequest& req, CacheContext& ctx, const DiscoveryDocument& doc) {
  const bool keep = req.keep_alive && req.parser.is_done() && !ctx.control.stopping;
  std::string out;
  if (notModified(doc, findHeader(req.headers, "If-None-Match"))) {
    // The apiserver answers before it negotiates: the validators, no Content-Type.
    HeaderList headers;
    for (const auto& field : doc.headers) {
      if (!headerNameEquals(field.first, "Content-Type")) headers.push_back(field);
    }
    headers.emplace_back(kServedByHeader, "cache");
    out = formatResponseHead(304, "", headers, BodyFraming::None, 0, keep);
    co_await writeDownstream(req.stream, out, ctx.options.write_timeout);
    co_return ForwardOutcome{304, keep, false};
  }
  HeaderList headers = doc.headers;
  headers.emplace_back(kServedByHeader, "cache");
  std::string compressed;
  std::string_view body = doc.body;
  if (shouldGzip(body.size(), findHeader(req.headers, "Accept-Encoding"), req.client_ip,
                 {ctx.options.gateway, ctx.options.gzip_loopback})) {
    GzipWriter().write(body, compressed, true);
    body = compressed;
    headers.emplace_back("Content-Encoding", "gzip");
  }
  out = formatResponseHead(200, "", headers, BodyFraming::ContentLength, body.size(), keep);
  if (req.method != "HEAD") out.append(body);
  co_await writeDownstream(req.stream, out, ctx.options.write_timeout);
  co_return ForwardOutcome{200, keep, false};
}

}  // namespace

asio::awaitable<std::optional<ForwardOutcome>> serveCachedDiscovery(DownstreamRequest& req, CacheContext& ctx,
                                                                   DiscoveryCache& documents,
                                                                   DiscoveryFlights& flights) {
  if (!documents.enabled() || req.method != "GET" || !DiscoveryCache::isDiscoveryPath(req.info.path) ||
      !answerIgnoresQuery(req.target) || requestsImpersonation(req.headers)) {
    co_return std::nullopt;
  }
  const std::optional<uint64_t> fingerprint = co_await awaitInputs(ctx);
  if (!fingerprint) {
    ctx.metrics.discoveryAnswered("unwatched");
    co_return std::nullopt;
  }
  const auto now = ctx.clock.now();
  if (!documents.settled(*fingerprint, now)) {
    ctx.metrics.discoveryAnswered("changing");
    co_return std::nullopt;
  }
  const std::string accept(findHeader(req.headers, "Accept"));
  const std::string key = DiscoveryCache::key(req.info.path, accept);
  DiscoveryDocumentPtr doc = documents.find(key);
  if (doc && documents.valid(*doc, *fingerprint, now)) {
    ctx.metrics.discoveryAnswered("cache");
    co_return co_await writeDocument(req, ctx, *doc);
  }
  auto fetch = [&]() -> asio::awaitable<DiscoveryFetch> {
    UpstreamReply reply =
        co_await callUpstream(ctx.pool, "GET", req.info.path, "", kFetchTimeout, kMaxDocumentBytes, ctx.options, accept);
    // Only a document is kept; any other answer (404 for a group that is gone, 503 for an
    // aggregated server that is down) is the apiserver's to give, so the request passes through.
    if (reply.code != 200) co_return DiscoveryFetch{nullptr, true};
    auto fetched = std::make_shared<DiscoveryDocument>();
    fetched->headers = documentHeaders(reply.headers);
    fetched->body = std::move(reply.body);
    fetched->fetched = now;
    fetched->fingerprint = *fingerprint;
    documents.put(key, fetched);
    co_return DiscoveryFetch{fetched, true};
  };
  DiscoveryFetch fetched;
  bool shared = false;
  try {
    fetched = co_await flights.run(key, fetch, DiscoveryFetch{}, shared);
  } catch (const UpstreamFailure& failure) {
    spdlog::debug("discovery {} not fetched: {}", req.info.path, failure.what());
  }
  if (fetched.doc) {
    ctx.metrics.discoveryAnswered("fetched");
    co_return co_await writeDocument(req, ctx, *fetched.doc);
  }
  if (doc && !fetched.answered) {
    // The upstream cannot be asked: the last document it gave, as a client's own
    // discovery cache would keep using it.
    ctx.metrics.discoveryAnswered("stale");
    co_return co_await writeDocument(req, ctx, *doc);
  }
  ctx.metrics.discoveryAnswered("upstream");
  co_return std::nullopt;
}

}  // namespace proxy::io
