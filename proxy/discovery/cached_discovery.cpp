// GET of a discovery document or /version answered from the DiscoveryCache
// (proxy/discovery/discovery_cache.h says when a document is valid): as the apiserver answers the
// same path and negotiated form (proxy/discovery/discovery_form.h), 304 for a matching
// If-None-Match, gzip past the apiserver's threshold. A missing or invalid document is
// fetched with the form's own Accept once for every request that wants it at the same
// time, with the proxy's credentials (discovery is the same for every caller; a gateway
// authorized the caller before). What cannot be answered passes through.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "cache/query/query_values.h"

#include "proxy/reads/cache_serving.h"
#include "proxy/discovery/discovery_cache.h"
#include "proxy/discovery/discovery_form.h"
#include "proxy/http/gzip_writer.h"
#include "proxy/reads/read_route.h"
#include "proxy/upstream/upstream_failure.h"
#include "watch/cached_resource.h"

namespace proxy::io {
namespace {

bool answerIgnoresQuery(const Request& req) {
  return req.rawQuery().empty() || DiscoveryCache::answerIgnoresQuery(req.rawQuery());
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
    // Woken when an informer starts or stops, or one of the inputs' stores moves (syncs).
    const std::function<ChangeSignals()> signals = [&ctx] {
      ChangeSignals out{ctx.registry.informersChanged()};
      for (const Input& input : kInputs) {
        for (cache::Encoding encoding : {cache::Encoding::Protobuf, cache::Encoding::Json}) {
          if (auto cached = ctx.registry.findRunning(input.group, "v1", input.resource, "", encoding)) {
            out.push_back(&cached->store().changes());
          }
        }
      }
      return out;
    };
    const std::function<bool()> settled = [&] {
      return (fingerprint = discoveryInputs(ctx.registry)).has_value() || !starting();
    };
    co_await awaitChange(ctx.clock, settled, signals, ctx.clock.now() + ctx.options.cache_start_wait, &ctx.client);
  }
  co_return fingerprint;
}

asio::awaitable<ForwardOutcome> writeDocument(const Request& req, ServerStream& out, CacheContext& ctx,
                                              const DiscoveryDocument& doc) {
  ResponseHead head;
  if (notModified(doc, req.header("If-None-Match"))) {
    // The apiserver answers before it negotiates: the validators, no Content-Type.
    for (const auto& field : doc.headers) {
      if (!headerNameEquals(field.first, "Content-Type")) head.headers.push_back(field);
    }
    head.headers.emplace_back(kServedByHeader, "cache");
    head.status = 304;
    head.body = false;
    co_await out.writeHead(std::move(head));
    co_return ForwardOutcome{304, false};
  }
  head.headers = doc.headers;
  head.headers.emplace_back(kServedByHeader, "cache");
  std::string compressed;
  std::string_view body = doc.body;
  if (shouldGzip(body.size(), req.header("Accept-Encoding"), req.client_ip, {ctx.options.gateway, ctx.options.gzip_loopback})) {
    GzipWriter().write(body, compressed, true);
    body = compressed;
    head.headers.emplace_back("Content-Encoding", "gzip");
  }
  head.body = !req.isHead();
  co_await out.writeWhole(std::move(head), body);
  co_return ForwardOutcome{200, false};
}

// How one negotiated form went.
enum class FormAnswer { Answered, NotServed, PassThrough };

// Answers `req` with the document of `form`: from memory, or fetched with the form's own
// Accept once for every request that wants it at the same time.
asio::awaitable<FormAnswer> serveForm(const Request& req, ServerStream& out, CacheContext& ctx,
                                      DiscoveryCache& documents, DiscoveryFlights& flights, const DiscoveryForm& form,
                                      uint64_t fingerprint, ForwardOutcome& outcome) {
  const auto now = ctx.clock.now();
  const std::string key = DiscoveryCache::key(req.info.path, form);
  DiscoveryDocumentPtr doc = documents.find(key);
  if (doc && documents.valid(*doc, fingerprint, now)) {
    if (!doc->served) co_return FormAnswer::NotServed;
    ctx.metrics.discoveryAnswered("cache");
    outcome = co_await writeDocument(req, out, ctx, *doc);
    co_return FormAnswer::Answered;
  }
  const std::string path = cache::escapePath(req.info.path);
  const std::string accept(form.accept());
  auto fetch = [&]() -> asio::awaitable<DiscoveryFetch> {
    UpstreamReply reply =
        co_await callUpstream(ctx.pool, "GET", path, "", kFetchTimeout, kMaxDocumentBytes, ctx.options, accept);
    // Only a document, or the 406 that says this form is not served, is kept; any other
    // answer (404 for a group that is gone, 503 for an aggregated server that is down) is
    // the apiserver's to give, so the request passes through.
    if (reply.code != 200 && reply.code != 406) co_return DiscoveryFetch{nullptr, true};
    auto fetched = std::make_shared<DiscoveryDocument>();
    fetched->served = reply.code == 200;
    if (fetched->served) {
      fetched->headers = documentHeaders(reply.headers);
      fetched->body = std::move(reply.body);
    }
    fetched->fetched = now;
    fetched->fingerprint = fingerprint;
    documents.put(key, fetched);
    co_return DiscoveryFetch{fetched, true};
  };
  DiscoveryFetch fetched;
  bool shared = false;
  try {
    fetched = co_await flights.run(key, fetch, DiscoveryFetch{}, shared);
  } catch (const UpstreamFailure& failure) {
    spdlog::debug("discovery {} ({}) not fetched: {}", path, form.name(), failure.what());
  }
  if (fetched.doc && !fetched.doc->served) co_return FormAnswer::NotServed;
  if (fetched.doc) {
    ctx.metrics.discoveryAnswered(shared ? "shared" : "fetched");
    outcome = co_await writeDocument(req, out, ctx, *fetched.doc);
    co_return FormAnswer::Answered;
  }
  if (doc && !fetched.answered) {
    if (!doc->served) co_return FormAnswer::NotServed;
    // The upstream cannot be asked: the last document it gave, as a client's own
    // discovery cache would keep using it.
    ctx.metrics.discoveryAnswered("stale");
    outcome = co_await writeDocument(req, out, ctx, *doc);
    co_return FormAnswer::Answered;
  }
  co_return FormAnswer::PassThrough;
}

}  // namespace

asio::awaitable<std::optional<ForwardOutcome>> serveCachedDiscovery(const Request& req, ServerStream& out,
                                                                   CacheContext& ctx, DiscoveryCache& documents,
                                                                   DiscoveryFlights& flights) {
  if (!documents.enabled() || req.method != "GET" || !DiscoveryCache::isDiscoveryPath(req.info.path) ||
      !answerIgnoresQuery(req) || requestsImpersonation(req.headers)) {
    co_return std::nullopt;
  }
  // Negotiated before anything is fetched: what passes through costs no wait.
  const std::vector<DiscoveryForm> forms = discoveryForms(req.info.path, req.accept, req.userAgent());
  if (forms.empty()) {
    ctx.metrics.discoveryAnswered("upstream");
    co_return std::nullopt;
  }
  const std::optional<uint64_t> fingerprint = co_await awaitInputs(ctx);
  if (!fingerprint) {
    ctx.metrics.discoveryAnswered("unwatched");
    co_return std::nullopt;
  }
  if (!documents.settled(*fingerprint, ctx.clock.now())) {
    ctx.metrics.discoveryAnswered("changing");
    co_return std::nullopt;
  }
  for (const DiscoveryForm& form : forms) {
    ForwardOutcome outcome;
    const FormAnswer answer = co_await serveForm(req, out, ctx, documents, flights, form, *fingerprint, outcome);
    if (answer == FormAnswer::Answered) co_return outcome;
    if (answer == FormAnswer::PassThrough) break;
  }
  ctx.metrics.discoveryAnswered("upstream");
  co_return std::nullopt;
}

}  // namespace proxy::io
