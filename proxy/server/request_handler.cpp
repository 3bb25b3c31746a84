// One request through the proxy (see the header). What can be decided without the event
// loop is plain code elsewhere: routing.h, health.h, write_sync.h, auth/gateway_admission.h.
#include "proxy/server/request_handler.h"

#include <optional>
#include <tuple>

#include <spdlog/spdlog.h>

#include "proxy/answers.h"
#include "proxy/auth/gateway_reviewer.h"
#include "proxy/discovery/discovery_cache.h"
#include "proxy/observability/logging.h"
#include "proxy/passthrough/passthrough.h"
#include "proxy/reads/cache_serving.h"
#include "proxy/server/flow_seat.h"
#include "proxy/server/health.h"
#include "proxy/server/routing.h"
#include "proxy/watches/watch_request.h"

namespace proxy::io {
namespace {

// Per-client attribution: the bytes a request writes, the request, and the watch while it is
// open. Until the request is admitted (a gateway authenticated it, a sidecar's filter let it
// through) it counts as "unauthenticated": a client's bucket is opened by what the gateway
// knows of it, never by a made-up User-Agent alone (issue 36, finding 5).
class ClientAttribution {
 public:
  ClientAttribution(ProxyMetrics& metrics, ServerStream& out, const Request& req)
      : metrics_(metrics), out_(out), req_(req), client_(&metrics.unauthenticatedClient()) {
    out_.setClient(client_);
  }
  ~ClientAttribution() {
    if (watch_open_) client_->watchClosed();
  }
  ClientAttribution(const ClientAttribution&) = delete;
  ClientAttribution& operator=(const ClientAttribution&) = delete;

  // The request is admitted: its User-Agent's bucket, opened by its source (the user once a
  // gateway knows it, else the address), counts it from here on.
  void admitted() {
    client_ = &metrics_.client(req_.userAgent(), req_.caller.empty() ? req_.client_ip : "user:" + req_.caller);
    out_.setClient(client_);
    if (req_.info.verb == "watch") {
      client_->watchOpened();
      watch_open_ = true;
    }
  }
  ClientMetrics& client() const { return *client_; }

 private:
  ProxyMetrics& metrics_;
  ServerStream& out_;
  const Request& req_;
  ClientMetrics* client_;
  bool watch_open_ = false;
};

class RequestHandler {
 public:
  RequestHandler(ServerContext& server, Worker& worker, Session& session, Request& req, ServerStream& out,
                 ClientAttribution& attribution)
      : server_(server),
        options_(server.options),
        worker_(worker),
        session_(session),
        req_(req),
        out_(out),
        attribution_(attribution) {}

  // Decides the route of the request and answers it; `served_by` says who did.
  asio::awaitable<ForwardOutcome> answer(const char*& served_by);

 private:
  asio::awaitable<ForwardOutcome> serveLocal();
  // The cache's answer, or nullopt to pass through.
  asio::awaitable<std::optional<ForwardOutcome>> serveFromCache();
  asio::awaitable<std::optional<ForwardOutcome>> cachedAnswer(CacheContext& ctx);
  // Gateway mode: nullopt to go on, else the refusal already written.
  asio::awaitable<std::optional<ForwardOutcome>> admitToGateway(bool& cacheable);

  // A watch passing through while its cache starts ends by --unsynced-watch-timeout.
  void capWhileCacheStarts();
  ForwardOutcome answered(unsigned code) const { return ForwardOutcome{code, false}; }

  ServerContext& server_;
  const ServerOptions& options_;
  Worker& worker_;
  Session& session_;
  Request& req_;
  ServerStream& out_;
  ClientAttribution& attribution_;
};

asio::awaitable<ForwardOutcome> RequestHandler::answer(const char*& served_by) {
  const RequestInfo& info = req_.info;
  const bool local = isLocalPath(info.path);
  bool cacheable = true;
  std::optional<ForwardOutcome> refused;
  if (filterRefuses(server_.request_filter, info, req_.method, req_.target, req_.headers)) {
    spdlog::debug("request filter refused {} {} from {} with Host \"{}\" (--accept-hosts, --accept-paths, "
                  "--reject-paths, --reject-methods)", req_.method, req_.target, req_.client_ip, req_.header("Host"));
    refused = answered(co_await writeFilterRefusal(out_, req_));
  }
  const bool filtered = refused.has_value();
  if (!refused && server_.gateway && !isHealthPath(info.path)) refused = co_await admitToGateway(cacheable);
  // A gateway's 403 comes after authentication; its 401s and health probes do not.
  if (!filtered && (!server_.gateway || !req_.caller.empty())) attribution_.admitted();
  // The apiserver's max-in-flight bounds, shared per flow (the user, once the gateway
  // knows it): long-running requests (watches, exec...) hold a seat of their own bound
  // for as long as they run and never wait for one; the others may wait briefly.
  FlowLimiter::Seat seat;
  const bool long_running = isLongRunning(info);
  const bool needs_seat = !refused && !local && (!long_running || info.verb == "watch");
  if (needs_seat) {
    FlowLimiter& limiter = long_running ? server_.watch_limiter : server_.request_limiter;
    const std::string flow = flowOf(req_);
    // An if, not a conditional expression: GCC 12 destroys a co_await's temporaries twice
    // inside one.
    if (long_running || !limiter.limited()) {
      seat = limiter.tryAcquire(flow);
    } else {
      seat = co_await awaitSeat(limiter, flow, out_, kSeatQueueWait);
    }
  }
  const bool too_many = needs_seat && !seat;
  if (refused || local || too_many) served_by = "proxy";
  if (refused) co_return *refused;
  if (local) co_return co_await serveLocal();
  if (too_many) {
    server_.metrics.limitRefused(long_running ? "watches" : "requests");
    co_return answered(co_await writeTooManyRequests(out_, req_));
  }
  if (cacheable) {
    if (auto cached = co_await serveFromCache()) {
      served_by = "cache";
      co_return *cached;
    }
  }
  const std::optional<WriteSyncTarget> sync =
      writeSyncTargetFor(info, req_.target, options_, server_.registry.get(), server_.metrics);
  co_return co_await forwardToUpstream(req_, out_, worker_.pool, options_, sync ? &*sync : nullptr);
}

asio::awaitable<std::optional<ForwardOutcome>> RequestHandler::admitToGateway(bool& cacheable) {
  auth::GatewayReviewer reviewer(
      auth::GatewayServices{*server_.gateway, server_.auth_failures, server_.token_flights, server_.access_flights,
                            server_.review_limiter, server_.metrics, options_, server_.tls.get()},
      worker_.pool);
  const bool discovery_from_memory = server_.registry && server_.discovery.enabled() && req_.method == "GET" &&
                                     DiscoveryCache::isDiscoveryPath(req_.info.path);
  const std::optional<unsigned> refused = co_await reviewer.admit(req_, out_, session_.certificate,
                                                                  discovery_from_memory, server_.registry != nullptr,
                                                                  cacheable);
  if (!refused) co_return std::nullopt;
  co_return answered(*refused);
}

asio::awaitable<ForwardOutcome> RequestHandler::serveLocal() {
  // A body on a local endpoint is never read; closing the connection keeps it from being
  // parsed as the next request. The answer is built first and named: GCC 12 mishandles a
  // temporary string in a co_await's arguments.
  const std::string_view path = req_.info.path;
  unsigned code = 200;
  std::string_view content_type = "text/plain; charset=utf-8";
  std::string body = "ok";
  if (req_.method != "GET" && req_.method != "HEAD") {
    code = 405;
    body = "405 method not allowed";
  } else if (path == "/metrics") {
    content_type = "text/plain; version=0.0.4; charset=utf-8";
    body = server_.metrics.renderText();
  } else if (path == "/debug/status") {
    const StatusReport report = server_.status ? server_.status() : StatusReport{};
    const bool json = wantsJsonStatus(req_.accept);
    content_type = json ? "application/json" : "text/html; charset=utf-8";
    body = json ? renderStatusJson(report) : renderStatusHtml(report);
  } else if (path == "/readyz") {
    std::tie(code, body) =
        readyz(req_.query, ReadinessInputs{server_.stopping, &server_.ready, server_.upstream.health()});
  }
  co_return answered(co_await writePlainText(out_, req_, code, content_type, body));
}

asio::awaitable<std::optional<ForwardOutcome>> RequestHandler::serveFromCache() {
  if (!server_.registry) co_return std::nullopt;
  CacheContext ctx{*server_.registry, worker_.pool, out_.control(), options_, server_.metrics, server_.clock};
  ctx.client.out = &out_;
  std::optional<ForwardOutcome> answer = co_await cachedAnswer(ctx);
  // A client that left during a wait is not passed through for: nothing is answered.
  if (!answer && ctx.client.gone) answer = ForwardOutcome{0, false};
  co_return answer;
}

asio::awaitable<std::optional<ForwardOutcome>> RequestHandler::cachedAnswer(CacheContext& ctx) {
  const RequestInfo& info = req_.info;
  if (!info.is_resource_request) {
    co_return co_await serveCachedDiscovery(req_, out_, ctx, server_.discovery, server_.discovery_flights);
  }
  if (!info.subresource.empty()) co_return std::nullopt;
  if (requestsImpersonation(req_.headers)) {
    server_.metrics.cachePassThrough(server_.resource_labels.labelOf(info, server_.registry.get()), "impersonation");
    co_return std::nullopt;
  }
  if (info.verb == "get" || info.verb == "list") co_return co_await serveCachedRead(req_, out_, ctx);
  if (info.verb == "watch") {
    std::optional<ForwardOutcome> answer = co_await serveCachedWatch(req_, out_, ctx);
    if (!answer) capWhileCacheStarts();
    co_return answer;
  }
  co_return std::nullopt;
}

void RequestHandler::capWhileCacheStarts() {
  // A watch no cache answers (a Table or JSON metadata rendering) keeps its timeout.
  if (!watchMedia(req_.accept)) return;
  const RequestInfo& info = req_.info;
  watch::InformerRegistry& registry = *server_.registry;
  const bool starting =
      registry.starting(info.api_group, info.api_version, info.resource, info.namespace_, cache::Encoding::Json) ||
      registry.starting(info.api_group, info.api_version, info.resource, info.namespace_, cache::Encoding::Protobuf);
  if (!starting) return;
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(options_.unsynced_watch_timeout);
  if (auto capped = cappedWatchTarget(req_.target, req_.query, seconds)) {
    server_.metrics.cachePassThrough(server_.resource_labels.labelOf(info, server_.registry.get()), "starting");
    req_.target = std::move(*capped);
  }
}

}  // namespace

asio::awaitable<ForwardOutcome> handleRequest(ServerContext& server, Worker& worker, Session& session, Request& req,
                                              ServerStream& out, std::chrono::steady_clock::time_point arrived) {
  ClientAttribution attribution(server.metrics, out, req);
  const char* served_by = "upstream";
  RequestHandler handler(server, worker, session, req, out, attribution);
  const ForwardOutcome outcome = co_await handler.answer(served_by);
  if (outcome.code != 0) {
    const double seconds = std::chrono::duration<double>(server.clock.now() - arrived).count();
    server.metrics.observeRequest(req.info.verb, server.resource_labels.labelOf(req.info, server.registry.get()),
                                  outcome.code, served_by, seconds, outcome.long_running);
    attribution.client().requestAnswered();
    logAccess(req.method, req.target, outcome.code, served_by, seconds, req.client_ip, std::string(req.userAgent()));
  }
  co_return outcome;
}

}  // namespace proxy::io
