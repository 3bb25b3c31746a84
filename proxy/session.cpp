// One coroutine per client connection: reads request heads and answers each one (a
// refusal, a local endpoint, the cache or the upstream) while the connection is kept
// alive. What can be decided without the event loop is plain code elsewhere: routing.h,
// health.h, answers.h, write_sync.h, auth/gateway_admission.h.
#include "proxy/session.h"

#include <ctime>
#include <variant>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include "proxy/answers.h"
#include "proxy/auth/client_certificate.h"
#include "proxy/auth/gateway_admission.h"
#include "proxy/cache_serving.h"
#include "proxy/health.h"
#include "proxy/http2_session.h"
#include "proxy/logging.h"
#include "proxy/passthrough.h"
#include "proxy/routing.h"
#include "proxy/status_negotiation.h"
#include "proxy/write_sync.h"
#include "watch/upstream_health.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

// Go adds 4096 bytes of slack to MaxHeaderBytes for the request line.
constexpr size_t kHeaderSlackBytes = 4096;
// First read on an idle keep-alive connection; the head parser reads the rest.
constexpr size_t kIdlePeekBytes = 4096;

// Read errors on a request head that end the connection without an answer, as Go's
// server ends it: the client left, went idle too long, or the server is stopping.
bool quietReadError(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof || ec == beast::error::timeout ||
         ec == asio::error::operation_aborted || ec == http::error::partial_message ||
         ec == asio::error::connection_reset;
}

std::string remoteAddress(asio::ip::tcp::socket& socket) {
  error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  return ec ? "" : remote.address().to_string();
}

// Counts an open watch against its client for as long as the request is served.
struct WatchHeld {
  ClientMetrics* client;
  ~WatchHeld() {
    if (client) client->watchClosed();
  }
};

// The steps of one connection's life. Lives in runSession's frame.
class SessionLoop {
 public:
  SessionLoop(ServerContext& server, Worker& worker, Session& session)
      : server_(server), options_(server.options), worker_(worker), session_(session) {}

  asio::awaitable<void> run(const std::string& client_ip);
  // An HTTP/2 stream's one request.
  asio::awaitable<void> serveOne(const std::string& client_ip);

 private:
  asio::awaitable<void> handshake();
  // False when the connection ends instead (closed, timed out, or a malformed head,
  // which got Go's plain-text 400 or 431).
  asio::awaitable<bool> readRequestHead(DownstreamParser& parser, bool first, const std::string& client_ip);
  // Reads and serves the next request; false when the connection ends after it.
  asio::awaitable<bool> serveNext(bool first, const std::string& client_ip);
  asio::awaitable<ForwardOutcome> serveRequest(DownstreamRequest& req, std::chrono::steady_clock::time_point start);
  // Decides the route of one request and answers it; `served_by` says who did.
  asio::awaitable<ForwardOutcome> answer(DownstreamRequest& req, const char*& served_by);

  asio::awaitable<ForwardOutcome> serveLocal(DownstreamRequest& req);
  // The cache's answer, or nullopt to pass through.
  asio::awaitable<std::optional<ForwardOutcome>> serveFromCache(DownstreamRequest& req);
  asio::awaitable<ForwardOutcome> refuseFiltered(DownstreamRequest& req);
  asio::awaitable<ForwardOutcome> refuseTooMany(DownstreamRequest& req);
  asio::awaitable<ForwardOutcome> answerStatus(DownstreamRequest& req, const Status& status);

  // Gateway mode: authenticates `req` and, when the cache may serve it, authorizes it
  // (the steps are auth/gateway_admission.h's). nullopt: go on (pass-through requests
  // then carry the caller's identity); otherwise the 401/403/429/503 already written.
  asio::awaitable<std::optional<ForwardOutcome>> admitGatewayRequest(DownstreamRequest& req, bool& cacheable);
  asio::awaitable<auth::TokenReviewResult> authenticateToken(const std::string& token);
  asio::awaitable<auth::AccessReviewResult> authorize(const auth::UserInfo& user, const auth::AccessAttributes& attrs);
  // The session's certificate identity if the certificate still verifies: re-checked
  // once it has expired or the client CA was reloaded since it was last verified.
  std::optional<auth::UserInfo> certificateUserNow();
  // A review's answer: from `cache`, else from the upstream (`path`, body from `body()`,
  // answer read by `parse`), asked once per key at a time; definitive answers are
  // remembered. `source` says which: cache, shared or upstream.
  template <class Result, class Body, class Parse>
  asio::awaitable<Result> review(auth::DecisionCache<Result>& cache, auth::ReviewFlights<Result>& flights,
                                 const std::string& key, const char* path, Body body, Parse parse, const char*& source);

  // An unread request body would be parsed as the next request: close instead.
  bool keepAlive(const DownstreamRequest& req) const {
    return req.keep_alive && req.parser.is_done() && !server_.stopping;
  }

  ServerContext& server_;
  const ServerOptions& options_;
  Worker& worker_;
  Session& session_;
};

asio::awaitable<void> SessionLoop::run(const std::string& client_ip) {
  // A connection accepted just before stop(), whose session was not yet registered when
  // stop() marked the others, ends here.
  if (session_.control.stopping || server_.stopping) co_return;
  const char* http2 = nullptr;  // how HTTP/2 was chosen, if it was
  if (session_.stream.tls()) {
    co_await handshake();
    if (negotiatedHttp2(session_.stream)) http2 = "alpn";
  } else if (options_.http2) {
    const Http2Preface preface =
        co_await readHttp2Preface(session_.stream, session_.buffer, options_.read_header_timeout);
    if (preface == Http2Preface::TimedOut) server_.metrics.connectionTimedOut("read_header");
    if (preface == Http2Preface::Closed || preface == Http2Preface::TimedOut) co_return;
    if (preface == Http2Preface::Present) http2 = "prior_knowledge";
  }
  if (http2) {
    server_.metrics.http2ConnectionOpened(http2);
    co_await serveHttp2(server_, worker_, session_, client_ip);
    co_return;
  }
  // The first request is served even when the server began stopping meanwhile (Go's
  // StateNew connections, see ProxyServer::stop); later ones are not.
  for (bool first = true; first || (!session_.control.stopping && !server_.stopping); first = false) {
    if (!co_await serveNext(first, client_ip)) break;
  }
}

asio::awaitable<void> SessionLoop::serveOne(const std::string& client_ip) {
  if (session_.control.stopping || server_.stopping) co_return;
  co_await serveNext(true, client_ip);
}

asio::awaitable<bool> SessionLoop::serveNext(bool first, const std::string& client_ip) {
  DownstreamParser parser;
  if (!co_await readRequestHead(parser, first, client_ip)) co_return false;
  const auto start = server_.clock.now();
  DownstreamRequest req{session_.stream, session_.buffer, parser};
  req.method = std::move(parser.method);
  req.target = std::move(parser.target);
  req.headers = std::move(parser.headers);
  req.info = RequestInfo::parse(req.method, req.target);
  req.client_ip = client_ip;
  req.keep_alive = parser.keep_alive();
  req.http10 = parser.version < 11;
  const ForwardOutcome outcome = co_await serveRequest(req, start);
  co_return outcome.keep_connection;
}

asio::awaitable<void> SessionLoop::handshake() {
  TlsStream& tls_stream = *session_.stream.tls();
  error_code ec;
  session_.stream.expires_after(options_.read_header_timeout);
  co_await tls_stream.async_handshake(asio::ssl::stream_base::server, redirect_error(use_awaitable, ec));
  session_.stream.expires_never();
  if (ec) throw std::runtime_error("TLS handshake: " + ec.message());
  if (auto identity = auth::certificateIdentity(tls_stream.native_handle(), options_.refused_certificate_groups)) {
    session_.certificate_user = std::move(identity->user);
    session_.certificate_not_after = identity->not_after;
  }
}

asio::awaitable<bool> SessionLoop::readRequestHead(DownstreamParser& parser, bool first, const std::string& client_ip) {
  parser.header_limit(static_cast<uint32_t>(options_.max_header_bytes + kHeaderSlackBytes));
  parser.body_limit(kUnlimitedBody);  // pass-through bodies stream; the upstream limits them
  session_.idle = !first;
  session_.awaiting_first_request = first;
  error_code ec;
  // A keep-alive client's next request has usually arrived by the time the answer to
  // the previous one is written: taken and parsed without a timed Asio read.
  const auto arrived = first || session_.buffer.size() > 0 ? std::nullopt : session_.stream.tryReceive(session_.buffer, kIdlePeekBytes);
  if (arrived && *arrived <= 0) co_return false;  // closed, or failed
  const bool buffered = parseBufferedHead(parser, session_.buffer, ec);
  if (!buffered && !ec && !first && session_.buffer.size() == 0) {
    // Go's IdleTimeout: a keep-alive connection may wait this long for the
    // first byte of its next request; the head then has the read-header timeout.
    session_.stream.expires_after(options_.idle_timeout);
    const size_t n = co_await session_.stream.async_read_some(session_.buffer.prepare(kIdlePeekBytes),
                                                              redirect_error(use_awaitable, ec));
    session_.buffer.commit(n);
    if (ec == beast::error::timeout) server_.metrics.connectionTimedOut("idle");
    if (ec) co_return false;  // idle timeout, client closed, or shutdown: closed without an answer, as Go does
  }
  if (!buffered && !ec) {
    // The whole head within the read-header timeout, however slowly it trickles
    // in (slowloris); on expiry the connection closes without an answer, as Go's.
    session_.stream.expires_after(options_.read_header_timeout);
    co_await http::async_read_header(session_.stream, session_.buffer, parser, redirect_error(use_awaitable, ec));
    session_.stream.expires_never();
  }
  session_.idle = session_.awaiting_first_request = false;
  if (ec == beast::error::timeout) server_.metrics.connectionTimedOut("read_header");
  if (ec) {
    if (!quietReadError(ec)) {
      const std::string& answer = ec == http::error::header_limit ? headerTooLargeAnswer() : badRequestAnswer();
      spdlog::debug("bad request from {}: {}", client_ip, ec.message());
      co_await writeDownstream(session_.stream, answer, options_.write_timeout);
    }
    co_return false;
  }
  co_return true;
}

asio::awaitable<ForwardOutcome> SessionLoop::serveRequest(DownstreamRequest& req,
                                                          std::chrono::steady_clock::time_point start) {
  // Per-client attribution: the bytes this connection writes from now on, the
  // request, and the watch while it is open.
  ClientMetrics& client = server_.metrics.client(findHeader(req.headers, "User-Agent"));
  session_.stream.setClient(&client);
  WatchHeld watch_held{req.info.verb == "watch" ? &client : nullptr};
  if (watch_held.client) client.watchOpened();

  const char* served_by = "upstream";
  const ForwardOutcome outcome = co_await answer(req, served_by);
  if (outcome.code != 0) {
    const double seconds = std::chrono::duration<double>(server_.clock.now() - start).count();
    server_.metrics.observeRequest(req.info.verb, server_.resource_labels.labelOf(req.info, server_.registry.get()),
                                   outcome.code, served_by, seconds, outcome.long_running);
    client.requestAnswered();
    logAccess(req.method, req.target, outcome.code, served_by, seconds, req.client_ip,
              std::string(findHeader(req.headers, "User-Agent")));
  }
  co_return outcome;
}

asio::awaitable<ForwardOutcome> SessionLoop::answer(DownstreamRequest& req, const char*& served_by) {
  const bool local = isLocalPath(req.info.path);
  bool cacheable = true;
  std::optional<ForwardOutcome> refused;
  if (filterRefuses(server_.request_filter, req.info, req.method, req.target, req.headers)) {
    refused = co_await refuseFiltered(req);
  }
  // The apiserver's max-in-flight bound, taken before any review is spent on the
  // request; long-running requests (watches, exec...) are bounded by their own.
  ClientLimiter::Slot request_slot;
  const bool overloaded = !refused && !local && !isLongRunning(req.info) && server_.request_limiter.limited() &&
                          !(request_slot = server_.request_limiter.tryAcquire(""));
  if (overloaded) server_.metrics.limitRefused("requests");
  if (!refused && !overloaded && server_.gateway && !isHealthPath(req.info.path)) {
    refused = co_await admitGatewayRequest(req, cacheable);
  }
  // Held until this watch ends, cached or passed through. Keyed by the authenticated
  // user in gateway mode, else by the client's address.
  ClientLimiter::Slot watch_slot;
  const bool too_many =
      overloaded ||
      (!refused && !local && req.info.verb == "watch" && server_.watch_limiter.limited() &&
       !(watch_slot = server_.watch_limiter.tryAcquire(req.caller.empty() ? req.client_ip : req.caller)));
  if (refused || local || too_many) served_by = "proxy";
  if (refused) co_return *refused;
  if (local) co_return co_await serveLocal(req);
  if (too_many) {
    if (!overloaded) server_.metrics.limitRefused("watches");
    co_return co_await refuseTooMany(req);
  }
  if (cacheable) {
    if (auto cached = co_await serveFromCache(req)) {
      served_by = "cache";
      co_return *cached;
    }
  }
  const std::optional<WriteSyncTarget> sync =
      writeSyncTargetFor(req.info, req.target, options_, server_.registry.get(), server_.metrics);
  co_return co_await forwardToUpstream(req, worker_.pool, session_.control, options_, sync ? &*sync : nullptr);
}

asio::awaitable<ForwardOutcome> SessionLoop::serveLocal(DownstreamRequest& req) {
  const bool head_only = req.method == "HEAD";
  // A body on a local endpoint is never read; closing the connection keeps it
  // from being parsed as the next request.
  const bool keep = keepAlive(req);
  unsigned code = 200;
  std::string text;
  if (req.method != "GET" && req.method != "HEAD") {
    code = 405;
    text = plainAnswer(code, "text/plain; charset=utf-8", "405 method not allowed", keep, head_only);
  } else if (req.info.path == "/metrics") {
    text = plainAnswer(code, "text/plain; version=0.0.4; charset=utf-8", server_.metrics.renderText(), keep, head_only);
  } else if (req.info.path == "/debug/status") {
    const StatusReport report = server_.status ? server_.status() : StatusReport{};
    const bool json = wantsJsonStatus(findHeader(req.headers, "Accept"));
    text = plainAnswer(code, json ? "application/json" : "text/html; charset=utf-8",
                       json ? renderStatusJson(report) : renderStatusHtml(report), keep, head_only);
  } else if (req.info.path == "/readyz") {
    const size_t qmark = req.target.find('?');
    const std::string_view query =
        qmark == std::string::npos ? std::string_view{} : std::string_view(req.target).substr(qmark + 1);
    auto [status, body] = readyz(query, ReadinessInputs{server_.stopping, &server_.ready, server_.upstream.health()});
    code = status;
    text = plainAnswer(code, "text/plain; charset=utf-8", body, keep, head_only);
  } else {
    text = plainAnswer(code, "text/plain; charset=utf-8", "ok", keep, head_only);
  }
  co_await writeDownstream(req.stream, text, options_.write_timeout);
  co_return ForwardOutcome{code, keep, false};
}

asio::awaitable<std::optional<ForwardOutcome>> SessionLoop::serveFromCache(DownstreamRequest& req) {
  if (!server_.registry) co_return std::nullopt;
  CacheContext ctx{*server_.registry, worker_.pool, session_.control, options_, server_.metrics, server_.clock};
  if (!req.info.is_resource_request) {
    co_return co_await serveCachedDiscovery(req, ctx, server_.discovery, server_.discovery_flights);
  }
  if (!req.info.subresource.empty()) co_return std::nullopt;
  if (requestsImpersonation(req.headers)) {
    server_.metrics.cachePassThrough(server_.resource_labels.labelOf(req.info, server_.registry.get()),
                                     "impersonation");
    co_return std::nullopt;
  }
  if (req.info.verb == "get" || req.info.verb == "list") co_return co_await serveCachedRead(req, ctx);
  if (req.info.verb == "watch") co_return co_await serveCachedWatch(req, ctx);
  co_return std::nullopt;
}

asio::awaitable<ForwardOutcome> SessionLoop::refuseFiltered(DownstreamRequest& req) {
  spdlog::debug("request filter refused {} {} from {} with Host \"{}\" (--accept-hosts, --accept-paths, "
                "--reject-paths, --reject-methods)", req.method, req.target, req.client_ip,
                findHeader(req.headers, "Host"));
  const bool keep = keepAlive(req);
  co_await writeDownstream(req.stream, filterRefusalAnswer(keep, req.method == "HEAD"), options_.write_timeout);
  co_return ForwardOutcome{403, keep, false};
}

asio::awaitable<ForwardOutcome> SessionLoop::refuseTooMany(DownstreamRequest& req) {
  const bool keep = keepAlive(req);
  co_await writeDownstream(req.stream, tooManyRequestsAnswer(keep), options_.write_timeout);
  co_return ForwardOutcome{429, keep, false};
}

asio::awaitable<ForwardOutcome> SessionLoop::answerStatus(DownstreamRequest& req, const Status& status) {
  const bool keep = keepAlive(req);
  const HttpAnswer answer = toHttpAnswer(status, statusEncodingFor(findHeader(req.headers, "Accept")));
  co_await writeDownstream(req.stream, formatAnswer(answer, keep), options_.write_timeout);
  co_return ForwardOutcome{answer.code, keep, false};
}

asio::awaitable<std::optional<ForwardOutcome>> SessionLoop::admitGatewayRequest(DownstreamRequest& req,
                                                                                bool& cacheable) {
  std::optional<auth::UserInfo> user = certificateUserNow();
  const std::string token = auth::GatewayAuth::bearerToken(req.headers);
  const bool impersonating = auth::GatewayAuth::wantsImpersonation(req.headers);
  if (user) {
    if (auto refusal = auth::admitCertificateUser(*user, impersonating, req.info, req.upstream_identity_headers)) {
      co_return co_await answerStatus(req, *refusal);
    }
  } else if (!token.empty()) {
    if (auth::refuseNewToken(*server_.gateway, server_.auth_failures, token, req.client_ip)) {
      co_return co_await answerStatus(req, tooManyRequestsStatus());
    }
    auto reviewed = auth::afterTokenReview(co_await authenticateToken(token), server_.auth_failures, req.client_ip);
    if (const Status* refusal = std::get_if<Status>(&reviewed)) co_return co_await answerStatus(req, *refusal);
    user = std::get<auth::UserInfo>(std::move(reviewed));
    req.upstream_token = token;  // pass-through requests go up as the caller
  }
  if (!user) co_return co_await answerStatus(req, auth::unauthorizedStatus());
  req.caller = user->name;

  // Authorization of what the proxy answers itself: the cache's answers, /metrics and
  // /debug/status.
  cacheable = auth::cacheableForCaller(req.info, impersonating, server_.registry != nullptr) ||
              (!impersonating && server_.registry && server_.discovery.enabled() && req.method == "GET" &&
               DiscoveryCache::isDiscoveryPath(req.info.path));
  if (!cacheable && req.info.path != "/metrics" && req.info.path != "/debug/status") co_return std::nullopt;
  const auth::AccessAttributes attrs = auth::GatewayAuth::attributesOf(req.info, req.method);
  const auth::AccessReviewResult access = co_await authorize(*user, attrs);
  if (auto refusal = auth::afterAccessReview(access, *user, attrs)) co_return co_await answerStatus(req, *refusal);
  co_return std::nullopt;
}

asio::awaitable<auth::TokenReviewResult> SessionLoop::authenticateToken(const std::string& token) {
  const std::string key = auth::GatewayAuth::tokenKey(token);
  const char* source = "";
  const auth::TokenReviewResult result = co_await review(
      server_.gateway->tokens(), server_.token_flights, key, auth::kTokenReviewPath,
      [&] { return auth::tokenReviewRequest(token); }, auth::parseTokenReview, source);
  server_.metrics.gatewayDecision("TokenReview", source,
                                  !result.definitive ? "error" : result.authenticated ? "allowed" : "denied");
  if (!result.authenticated) spdlog::debug("token review: not authenticated: {}", result.error);
  co_return result;
}

asio::awaitable<auth::AccessReviewResult> SessionLoop::authorize(const auth::UserInfo& user,
                                                                 const auth::AccessAttributes& attrs) {
  const std::string key = auth::GatewayAuth::accessKey(user, attrs);
  const char* source = "";
  const auth::AccessReviewResult access = co_await review(
      server_.gateway->access(), server_.access_flights, key, auth::kSubjectAccessReviewPath,
      [&] { return auth::subjectAccessReviewRequest(user, attrs); }, auth::parseSubjectAccessReview, source);
  server_.metrics.gatewayDecision("SubjectAccessReview", source,
                                  !access.definitive ? "error" : access.allowed ? "allowed" : "denied");
  co_return access;
}

std::optional<auth::UserInfo> SessionLoop::certificateUserNow() {
  if (!session_.certificate_user || !server_.tls) return session_.certificate_user;
  std::shared_ptr<asio::ssl::context> current = server_.tls->current();
  if (current == session_.verified_with && std::time(nullptr) < session_.certificate_not_after) {
    return session_.certificate_user;
  }
  // An HTTP/2 stream's certificate is its connection's.
  TlsStream* stream = session_.connection ? session_.connection->stream.tls() : session_.stream.tls();
  if (!stream || !auth::certificateStillVerifies(stream->native_handle(), current->native_handle())) {
    spdlog::info("the client certificate of {} no longer verifies (expired, or its CA was rotated out)",
                 session_.certificate_user->name);
    session_.certificate_user.reset();
    return std::nullopt;
  }
  session_.verified_with = std::move(current);
  return session_.certificate_user;
}

template <class Result, class Body, class Parse>
asio::awaitable<Result> SessionLoop::review(auth::DecisionCache<Result>& cache, auth::ReviewFlights<Result>& flights,
                                            const std::string& key, const char* path, Body body, Parse parse,
                                            const char*& source) {
  if (std::optional<Result> remembered = cache.find(key)) {
    source = "cache";
    co_return *remembered;
  }
  auto fetch = [&]() -> asio::awaitable<Result> {
    Result result;
    const ClientLimiter::Slot slot = server_.review_limiter.tryAcquire("");
    if (!slot) {
      // Not asked, not remembered: the caller answers 429 and its client retries.
      server_.metrics.limitRefused("reviews");
      result.throttled = true;
      result.error = "too many reviews in flight";
      co_return result;
    }
    try {
      const UpstreamReply reply =
          co_await callUpstream(worker_.pool, "POST", path, body(), options_.review_timeout, 1 << 20, options_);
      result = parse(reply.code, reply.body);
    } catch (const UpstreamFailure& failure) {
      result.error = failure.what();
    }
    // Like the apiserver's webhook authenticator and authorizer, an unanswered review
    // decides nothing (401, or 503 for access) and is not remembered.
    if (result.definitive) cache.put(key, result);
    co_return result;
  };
  Result unanswered;
  unanswered.error = "the shared review did not complete";
  bool shared = false;
  Result result = co_await flights.run(key, fetch, unanswered, shared);
  source = shared ? "shared" : "upstream";
  co_return result;
}

}  // namespace

asio::awaitable<void> runSession(ServerContext& server, SessionPtr session, Worker& worker) {
  worker.sessions.insert(session);
  server.metrics.connectionOpened();
  const std::string client_ip = remoteAddress(session->stream.socket());
  try {
    SessionLoop loop(server, worker, *session);
    co_await loop.run(client_ip);
  } catch (const std::exception& e) {
    spdlog::debug("connection from {} ended: {}", client_ip, e.what());
  }
  error_code ec;
  session->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  session->stream.close();
  worker.sessions.erase(session);
  server.metrics.connectionClosed();
  server.sessionEnded();
}

asio::awaitable<void> serveHttp2Stream(ServerContext& server, Worker& worker, SessionPtr session,
                                       const std::string& client_ip) {
  // Registered like a connection, so that shutdown interrupts its watch the same way.
  worker.sessions.insert(session);
  server.metrics.http2StreamOpened();
  try {
    SessionLoop loop(server, worker, *session);
    co_await loop.serveOne(client_ip);
  } catch (const std::exception& e) {
    spdlog::debug("HTTP/2 stream from {} ended: {}", client_ip, e.what());
  }
  session->stream.close();  // ends the response, or resets a stream left unanswered
  worker.sessions.erase(session);
}

}  // namespace proxy::io
