// ProxyServer: acceptor, io threads, and one coroutine per client connection
// that reads request heads and dispatches them (local endpoint or pass-through).
#include "proxy/proxy_server.h"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_set>

#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <algorithm>

#include <boost/asio/steady_timer.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "proxy/auth/client_certificate.h"
#include "proxy/auth/gateway_auth.h"
#include "proxy/auth/failure_limiter.h"
#include "proxy/auth/review_flights.h"
#include "cache/query_values.h"
#include "proxy/cache_serving.h"
#include "proxy/io_internal.h"
#include "proxy/logging.h"
#include "proxy/proxy_metrics.h"
#include "proxy/query_params.h"
#include "proxy/request_filter.h"
#include "proxy/status_negotiation.h"
#include "proxy/write_sync.h"
#include "watch/upstream_health.h"
#include "proxy/client_limiter.h"

namespace proxy {
namespace {

using namespace io;
using asio::redirect_error;
using asio::use_awaitable;

// One client connection. Touched only by its io thread.
struct Session {
  Session(asio::ip::tcp::socket&& socket, std::shared_ptr<asio::ssl::context> tls)
      : stream(std::move(socket), tls), verified_with(std::move(tls)) {}
  DownstreamStream stream;
  beast::flat_buffer buffer;
  SessionControl control;
  bool idle = true;  // waiting for the next request head
  std::optional<auth::UserInfo> certificate_user;  // a verified client certificate's identity
  std::time_t certificate_not_after = 0;
  // The serving context (client CA) the certificate was last verified with.
  std::shared_ptr<asio::ssl::context> verified_with;
  ClientLimiter::Slot connection_slot;             // held for the connection's lifetime
};
using SessionPtr = std::shared_ptr<Session>;

// One event loop with its own upstream connections.
struct Worker {
  Worker(Upstream& upstream, const ServerOptions& options)
      : pool(upstream, ctx, options), guard(asio::make_work_guard(ctx)) {}
  asio::io_context ctx{1};
  UpstreamPool pool;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  std::unordered_set<SessionPtr> sessions;  // live connections, for shutdown
  std::thread thread;
};

// How Go's net/http answers a request it cannot parse: plain text, then close.
const std::string kBadRequest =
    "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request";
const std::string kHeaderTooLarge =
    "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: "
    "close\r\n\r\n431 Request Header Fields Too Large";

// Go adds 4096 bytes of slack to MaxHeaderBytes for the request line.
constexpr size_t kHeaderSlackBytes = 4096;
// First read on an idle keep-alive connection; the head parser reads the rest.
constexpr size_t kIdlePeekBytes = 4096;

// kube-apiserver's max-in-flight (and priority-and-fairness) rejection: Go's
// http.Error, so plain text rather than a Status, with Retry-After: 1
// (filters/maxinflight.go, tooManyRequests).
std::string tooManyRequestsAnswer(bool keep_alive) {
  const std::string body = "Too many requests, please try again later.\n";
  HeaderList headers = {{"Cache-Control", "no-cache, private"},
                        {"Content-Type", "text/plain; charset=utf-8"},
                        {"Retry-After", "1"},
                        {"X-Content-Type-Options", "nosniff"}};
  return formatResponseHead(429, "", headers, BodyFraming::ContentLength, body.size(), keep_alive) + body;
}

// The same refusal where the proxy answers with a Status (gateway admission):
// apierrors.NewTooManyRequests, as the apiserver's authentication paths word it.
ApiStatus tooManyRequestsStatus() {
  ApiStatus status;
  status.reason = Reason::TooManyRequests;
  status.message = "Too many requests, please try again later.";
  status.retry_after_seconds = 1;
  return status;
}

// The serving certificate, key and client CA as one TLS context, rebuilt when a file
// changes (a Secret update swaps the mounted files). A context that fails to build
// (files mid-rotation, mismatched pair) leaves the previous one serving. Used by the
// accept loop, and by requests re-verifying a client certificate; each session keeps the
// context it started with.
class ServingTls {
 public:
  explicit ServingTls(const ServerOptions& options) : options_(options) {
    context_ = build();  // throws: a bad certificate at start is a configuration error
    signature_ = signature();
  }

  std::shared_ptr<asio::ssl::context> current() {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - checked_ < std::chrono::seconds(1)) return context_;
    checked_ = now;
    const std::string sig = signature();
    if (sig == signature_) return context_;
    try {
      context_ = build();
      signature_ = sig;
      spdlog::info("reloaded the serving certificate from {}", options_.tls_cert_file);
    } catch (const std::exception& e) {
      spdlog::warn("keeping the previous serving certificate: {}", e.what());
    }
    return context_;
  }

 private:
  // Inode, size and mtime of each file: a rewrite in place or a symlink swap changes it.
  std::string signature() const {
    std::string out;
    for (const std::string* path : {&options_.tls_cert_file, &options_.tls_key_file, &options_.client_ca_file}) {
      struct stat st {};
      if (path->empty() || ::stat(path->c_str(), &st) != 0) {
        out += "-;";
        continue;
      }
      out += std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
             "." + std::to_string(st.st_mtim.tv_nsec) + ";";
    }
    return out;
  }

  std::shared_ptr<asio::ssl::context> build() const {
    auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
    SSL_CTX* native = ctx->native_handle();
    // TLS 1.2+, as the apiserver serves by default.
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_compression);
    ctx->use_certificate_chain_file(options_.tls_cert_file);
    ctx->use_private_key_file(options_.tls_key_file, asio::ssl::context::pem);
    if (SSL_CTX_check_private_key(native) != 1) {
      throw std::runtime_error(options_.tls_key_file + " does not match " + options_.tls_cert_file);
    }
    if (!options_.client_ca_file.empty()) {
      ctx->load_verify_file(options_.client_ca_file);
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options_.client_ca_file.c_str())) {
        SSL_CTX_set_client_CA_list(native, names);  // clients pick their certificate by it
      }
      // Ask for a certificate, never require one (token callers have none). A certificate
      // that fails verification authenticates nobody: checked after the handshake.
      SSL_CTX_set_verify(native, SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
    }
    return ctx;
  }

  const ServerOptions& options_;
  std::mutex mu_;
  std::shared_ptr<asio::ssl::context> context_;
  std::string signature_;
  std::chrono::steady_clock::time_point checked_ = std::chrono::steady_clock::now();
};

bool isHealthPath(const std::string& path) { return path == "/healthz" || path == "/livez" || path == "/readyz"; }

// The apiserver's BasicLongRunningRequestCheck: watch and proxy verbs, and the
// attach, exec, proxy, log and portforward subresources.
bool isLongRunning(const RequestInfo& info) {
  if (info.verb == "watch" || info.verb == "proxy") return true;
  const std::string& s = info.subresource;
  return s == "attach" || s == "exec" || s == "proxy" || s == "log" || s == "portforward";
}

bool isLocalPath(const std::string& path) {
  return path == "/healthz" || path == "/livez" || path == "/readyz" || path == "/metrics";
}

// kubectl proxy's refusal of a filtered request: Go's http.Error(w, "Forbidden", 403),
// plain text rather than a Status, so a client sees the same answer from either proxy.
std::string filterRefusalAnswer(bool keep_alive, bool head_only) {
  const std::string body = "Forbidden\n";
  HeaderList headers = {{"Content-Type", "text/plain; charset=utf-8"}, {"X-Content-Type-Options", "nosniff"}};
  std::string out = formatResponseHead(403, "", headers, BodyFraming::ContentLength, body.size(), keep_alive);
  if (!head_only) out += body;
  return out;
}

std::string plainAnswer(unsigned code, const std::string& content_type, const std::string& body, bool keep_alive,
                        bool head_only) {
  HeaderList headers = {{"Cache-Control", "no-cache, private"},
                        {"Content-Type", content_type},
                        {"X-Content-Type-Options", "nosniff"}};
  std::string out = formatResponseHead(code, "", headers, BodyFraming::ContentLength, body.size(), keep_alive);
  if (!head_only) out += body;
  return out;
}

}  // namespace

struct ProxyServer::Impl {
  Impl(ServerOptions server, const UpstreamOptions& upstream_options)
      : options(std::move(server)),
        request_filter(options.request_filter),
        upstream(upstream_options, metrics),
        watch_limiter(options.max_watches_per_client, options.max_inflight_watches),
        connection_limiter(options.max_connections_per_client, options.max_connections),
        request_limiter(0, options.max_requests_inflight),
        review_limiter(0, options.max_inflight_reviews) {}

  asio::awaitable<void> acceptLoop();
  asio::awaitable<void> runSession(SessionPtr session, Worker& worker);
  asio::awaitable<ForwardOutcome> serveLocal(DownstreamRequest& req);
  // /readyz the way the apiserver words it: one "[+]name ok" / "[-]name failed" line per
  // check (always on failure, on success with ?verbose), `exclude` skips checks.
  std::pair<unsigned, std::string> readyz(std::string_view raw_query) const;
  // The cache a write's answer waits for (read-your-writes), or nullopt.
  std::optional<WriteSyncTarget> writeSyncTarget(const DownstreamRequest& req);
  // The resource label of a request's metrics: a resource discovery lists, else "other"
  // (the path is the client's to choose; issue 16, finding 2).
  // Names discovery does not list (or before it answered): the first
  // kMaxUnknownResourceLabels distinct resource-like names, then "other".
  std::string_view resourceLabel(const RequestInfo& info) {
    if (info.resource.empty()) return {};
    if (registry && registry->known(info.api_group, info.api_version, info.resource)) return info.resource;
    const bool resource_like = info.resource.size() <= 63 && std::all_of(info.resource.begin(), info.resource.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    });
    if (!resource_like) return "other";
    std::lock_guard lock(label_mu);
    if (resource_labels.count(info.resource) > 0) return info.resource;
    if (resource_labels.size() >= kMaxUnknownResourceLabels) return "other";
    resource_labels.insert(info.resource);
    return info.resource;
  }
  static constexpr size_t kMaxUnknownResourceLabels = 128;
  std::mutex label_mu;
  std::unordered_set<std::string> resource_labels;  // guarded by label_mu
  // The cache's answer, or nullopt to pass through.
  asio::awaitable<std::optional<ForwardOutcome>> serveFromCache(DownstreamRequest& req, Worker& worker,
                                                                SessionControl& control);
  void sessionEnded();
  // Gateway mode: authenticates `req` and, when the cache may serve it, authorizes it.
  // nullopt: go on (pass-through requests then carry the caller's identity); otherwise
  // the 401/403/503 already written.
  asio::awaitable<std::optional<ForwardOutcome>> admitGatewayRequest(DownstreamRequest& req, Session& session,
                                                                      Worker& worker, bool& cacheable);
  asio::awaitable<auth::TokenReviewResult> authenticateToken(const std::string& token, Worker& worker);
  // The session's certificate identity if the certificate still verifies: re-checked
  // once it has expired or the client CA was reloaded since it was last verified.
  std::optional<auth::UserInfo> certificateUserNow(Session& session);
  // A review's answer: from `cache`, else from the upstream (`path`, body from `body()`,
  // answer read by `parse`), asked once per key at a time; definitive answers are
  // remembered. `source` says which: cache, shared or upstream.
  template <class Result, class Body, class Parse>
  asio::awaitable<Result> review(auth::DecisionCache<Result>& cache, auth::ReviewFlights<Result>& flights,
                                 const std::string& key, const char* path, Body body, Parse parse, Worker& worker,
                                 const char*& source);
  asio::awaitable<ForwardOutcome> answerStatus(DownstreamRequest& req, const ApiStatus& status);
  // True when the request filter (kubectl proxy's) refuses `req`; refuseFiltered answers it.
  bool filterRefuses(const DownstreamRequest& req) const;
  asio::awaitable<ForwardOutcome> refuseFiltered(DownstreamRequest& req);

  const ServerOptions options;
  const RequestFilter request_filter;  // kubectl proxy's --accept-hosts and friends
  ProxyMetrics metrics;
  Upstream upstream;
  ClientLimiter watch_limiter;
  ClientLimiter connection_limiter;  // per client address
  ClientLimiter request_limiter;     // requests in flight that are not long-running
  ClientLimiter review_limiter;      // gateway reviews in flight upstream
  std::function<bool()> ready;
  std::shared_ptr<watch::InformerRegistry> registry;  // null: everything passes through
  std::vector<std::unique_ptr<Worker>> workers;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor;  // runs on workers[0]
  std::unique_ptr<ServingTls> tls;                    // null: plain HTTP
  std::unique_ptr<auth::GatewayAuth> gateway;         // null: sidecar mode
  auth::ReviewFlights<auth::TokenReviewResult> token_flights;
  // Failed authentications per client address: 20 at once, then 2 per second.
  auth::FailureLimiter auth_failures{2.0, 20.0};
  auth::ReviewFlights<auth::AccessReviewResult> access_flights;
  std::string host;
  uint16_t port = 0;
  bool started = false;
  std::atomic<bool> stopping{false};

  std::mutex drain_mu;
  std::condition_variable drained;
  size_t open_sessions = 0;  // guarded by drain_mu
};

asio::awaitable<void> ProxyServer::Impl::acceptLoop() {
  size_t next = 0;
  // Go's http.Server after a temporary accept error: wait 5 ms, doubling up to 1 s, so
  // EMFILE (out of descriptors, the pending connection still queued) does not spin a core
  // (issue 16). Reset by the next accepted connection.
  std::chrono::milliseconds retry_delay{0};
  asio::steady_timer retry_timer(co_await asio::this_coro::executor);
  while (true) {
    Worker& worker = *workers[next++ % workers.size()];
    error_code ec;
    asio::ip::tcp::socket socket =
        co_await acceptor->async_accept(worker.ctx, redirect_error(use_awaitable, ec));
    if (ec) {
      if (stopping || ec == asio::error::operation_aborted) co_return;
      retry_delay = retry_delay.count() == 0 ? std::chrono::milliseconds(5)
                                             : std::min(retry_delay * 2, std::chrono::milliseconds(1000));
      // EMFILE and friends: keep accepting once descriptors free up.
      spdlog::warn("accept failed: {}; retrying in {} ms", ec.message(), retry_delay.count());
      retry_timer.expires_after(retry_delay);
      co_await retry_timer.async_wait(redirect_error(use_awaitable, ec));
      continue;
    }
    retry_delay = std::chrono::milliseconds(0);
    ClientLimiter::Slot connection_slot;
    if (connection_limiter.limited()) {
      const auto remote = socket.remote_endpoint(ec);
      connection_slot = connection_limiter.tryAcquire(ec ? "" : remote.address().to_string());
      if (!connection_slot) {
        // Closed before a byte is read: the client sees a reset and retries later, as
        // from a server out of descriptors, which is what this bound prevents.
        metrics.limitRefused("connections");
        socket.close(ec);
        continue;
      }
    }
    socket.set_option(asio::ip::tcp::no_delay(true), ec);
    {
      std::lock_guard lock(drain_mu);
      ++open_sessions;
    }
    auto session = std::make_shared<Session>(std::move(socket), tls ? tls->current() : nullptr);
    session->connection_slot = std::move(connection_slot);
    asio::co_spawn(worker.ctx, runSession(std::move(session), worker), asio::detached);
  }
}

void ProxyServer::Impl::sessionEnded() {
  std::lock_guard lock(drain_mu);
  if (--open_sessions == 0) drained.notify_all();
}

asio::awaitable<ForwardOutcome> ProxyServer::Impl::serveLocal(DownstreamRequest& req) {
  const bool head_only = req.method == "HEAD";
  // A body on a local endpoint is never read; closing the connection keeps it
  // from being parsed as the next request.
  const bool keep = req.keep_alive && req.parser.is_done() && !stopping;
  unsigned code = 200;
  std::string text;
  if (req.method != "GET" && req.method != "HEAD") {
    code = 405;
    text = plainAnswer(code, "text/plain; charset=utf-8", "405 method not allowed", keep, head_only);
  } else if (req.info.path == "/metrics") {
    text = plainAnswer(code, "text/plain; version=0.0.4; charset=utf-8", metrics.renderText(), keep, head_only);
  } else if (req.info.path == "/readyz") {
    const size_t qmark = req.target.find('?');
    auto [status, body] = readyz(qmark == std::string::npos ? std::string_view{} : std::string_view(req.target).substr(qmark + 1));
    code = status;
    text = plainAnswer(code, "text/plain; charset=utf-8", body, keep, head_only);
  } else {
    text = plainAnswer(code, "text/plain; charset=utf-8", "ok", keep, head_only);
  }
  co_await writeDownstream(req.stream, text, options.write_timeout);
  co_return ForwardOutcome{code, keep, false};
}

asio::awaitable<ForwardOutcome> ProxyServer::Impl::answerStatus(DownstreamRequest& req, const ApiStatus& status) {
  // An unread request body would be parsed as the next request: close instead.
  const bool keep = req.keep_alive && req.parser.is_done() && !stopping;
  const HttpAnswer answer = toHttpAnswer(status, statusEncodingFor(findHeader(req.headers, "Accept")));
  co_await writeDownstream(req.stream, formatAnswer(answer, keep), options.write_timeout);
  co_return ForwardOutcome{answer.code, keep, false};
}

template <class Result, class Body, class Parse>
asio::awaitable<Result> ProxyServer::Impl::review(auth::DecisionCache<Result>& cache,
                                                  auth::ReviewFlights<Result>& flights, const std::string& key,
                                                  const char* path, Body body, Parse parse, Worker& worker,
                                                  const char*& source) {
  if (std::optional<Result> remembered = cache.find(key)) {
    source = "cache";
    co_return *remembered;
  }
  auto fetch = [&]() -> asio::awaitable<Result> {
    Result result;
    const ClientLimiter::Slot slot = review_limiter.tryAcquire("");
    if (!slot) {
      // Not asked, not remembered: the caller answers 429 and its client retries.
      metrics.limitRefused("reviews");
      result.throttled = true;
      result.error = "too many reviews in flight";
      co_return result;
    }
    try {
      const UpstreamReply reply =
          co_await callUpstream(worker.pool, "POST", path, body(), options.review_timeout, 1 << 20, options);
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

asio::awaitable<auth::TokenReviewResult> ProxyServer::Impl::authenticateToken(const std::string& token,
                                                                               Worker& worker) {
  const std::string key = auth::GatewayAuth::tokenKey(token);
  const char* source = "";
  const auth::TokenReviewResult result = co_await review(
      gateway->tokens(), token_flights, key, auth::kTokenReviewPath,
      [&] { return auth::tokenReviewRequest(token); }, auth::parseTokenReview, worker, source);
  metrics.gatewayDecision("TokenReview", source,
                          !result.definitive ? "error" : result.authenticated ? "allowed" : "denied");
  if (!result.authenticated) spdlog::debug("token review: not authenticated: {}", result.error);
  co_return result;
}

std::optional<auth::UserInfo> ProxyServer::Impl::certificateUserNow(Session& session) {
  if (!session.certificate_user || !tls) return session.certificate_user;
  std::shared_ptr<asio::ssl::context> current = tls->current();
  if (current == session.verified_with && std::time(nullptr) < session.certificate_not_after) {
    return session.certificate_user;
  }
  TlsStream* stream = session.stream.tls();
  if (!stream || !auth::certificateStillVerifies(stream->native_handle(), current->native_handle())) {
    spdlog::info("the client certificate of {} no longer verifies (expired, or its CA was rotated out)",
                 session.certificate_user->name);
    session.certificate_user.reset();
    return std::nullopt;
  }
  session.verified_with = std::move(current);
  return session.certificate_user;
}

asio::awaitable<std::optional<ForwardOutcome>> ProxyServer::Impl::admitGatewayRequest(DownstreamRequest& req,
                                                                                       Session& session,
                                                                                       Worker& worker,
                                                                                       bool& cacheable) {
  // Authentication: a verified client certificate first, then a bearer token (the
  // apiserver's order); nothing else is anonymous-allowed through the gateway.
  std::optional<auth::UserInfo> user = certificateUserNow(session);
  const std::string token = auth::GatewayAuth::bearerToken(req.headers);
  const bool impersonating = auth::GatewayAuth::wantsImpersonation(req.headers);
  if (user) {
    // The proxy impersonates a certificate user with its own credentials; impersonation
    // cannot be chained, so such a caller cannot ask for more.
    if (impersonating) {
      ApiStatus status = auth::forbiddenStatus(*user, {false, "impersonate", "", "", "", "", "", "", req.info.path},
                                               "client-certificate users cannot impersonate through kube-cache-proxy");
      co_return co_await answerStatus(req, status);
    }
    req.upstream_identity_headers.emplace_back("Impersonate-User", user->name);
    for (const auto& group : user->groups) {
      if (group != "system:authenticated") req.upstream_identity_headers.emplace_back("Impersonate-Group", group);
    }
  } else if (!token.empty()) {
    // An address that keeps presenting tokens the upstream refuses gets the apiserver's
    // own 429 for new tokens instead of costing a TokenReview each (issue 16, finding 8).
    if (!gateway->tokens().find(auth::GatewayAuth::tokenKey(token)) && auth_failures.exhausted(req.client_ip)) {
      co_return co_await answerStatus(req, tooManyRequestsStatus());
    }
    const auth::TokenReviewResult review = co_await authenticateToken(token, worker);
    if (review.throttled) co_return co_await answerStatus(req, tooManyRequestsStatus());
    if (review.authenticated) {
      user = review.user;
    } else {
      auth_failures.failed(req.client_ip);
    }
    req.upstream_token = token;  // pass-through requests go up as the caller
  }
  if (!user) co_return co_await answerStatus(req, auth::unauthorizedStatus());
  req.caller = user->name;

  // Authorization of what the proxy answers itself. A client impersonating someone else
  // is left to the upstream (which checks the impersonation), so never served from here.
  const auth::AccessAttributes attrs = auth::GatewayAuth::attributesOf(req.info, req.method);
  const bool local_metrics = req.info.path == "/metrics";
  // A namespace or name no object can have is the upstream's to answer (its own 404 or
  // 400, after its own review): the proxy reviews only what it could serve.
  cacheable = !impersonating && registry && req.info.is_resource_request && req.info.subresource.empty() &&
              (req.info.verb == "get" || req.info.verb == "list" || req.info.verb == "watch") &&
              auth::GatewayAuth::reviewableNames(req.info);
  if (!cacheable && !local_metrics) co_return std::nullopt;
  const std::string key = auth::GatewayAuth::accessKey(*user, attrs);
  const char* source = "";
  const auth::AccessReviewResult access = co_await review(
      gateway->access(), access_flights, key, auth::kSubjectAccessReviewPath,
      [&] { return auth::subjectAccessReviewRequest(*user, attrs); }, auth::parseSubjectAccessReview, worker, source);
  metrics.gatewayDecision("SubjectAccessReview", source,
                          !access.definitive ? "error" : access.allowed ? "allowed" : "denied");
  if (access.allowed) co_return std::nullopt;
  if (access.throttled) co_return co_await answerStatus(req, tooManyRequestsStatus());
  if (!access.definitive) {
    // Fail closed, and say why: the apiserver cannot be asked.
    spdlog::warn("subject access review failed: {}", access.error);
    ApiStatus status;
    status.reason = Reason::ServiceUnavailable;
    status.message = "authorization check failed: " + access.error;
    co_return co_await answerStatus(req, status);
  }
  // Denied: exactly the 403 the apiserver gives this caller. A cluster-wide LIST or
  // WATCH by a caller allowed only in some namespaces is denied here too, not filtered.
  co_return co_await answerStatus(req, auth::forbiddenStatus(*user, attrs, access.reason));
}

bool ProxyServer::Impl::filterRefuses(const DownstreamRequest& req) const {
  // Health probes say only whether the proxy is up; a gateway answers them unauthenticated too.
  if (!request_filter.active() || isHealthPath(req.info.path)) return false;
  // Go's server answers a second Host header with 400 before kubectl's filter sees it.
  const auto host_headers = std::count_if(req.headers.begin(), req.headers.end(),
                                          [](const auto& header) { return headerNameEquals(header.first, "Host"); });
  return host_headers > 1 || !request_filter.allows(req.method, req.target, findHeader(req.headers, "Host"));
}

asio::awaitable<ForwardOutcome> ProxyServer::Impl::refuseFiltered(DownstreamRequest& req) {
  spdlog::debug("request filter refused {} {} from {} with Host \"{}\" (--accept-hosts, --accept-paths, "
                "--reject-paths, --reject-methods)", req.method, req.target, req.client_ip,
                findHeader(req.headers, "Host"));
  const bool keep = req.keep_alive && req.parser.is_done() && !stopping;
  co_await writeDownstream(req.stream, filterRefusalAnswer(keep, req.method == "HEAD"), options.write_timeout);
  co_return ForwardOutcome{403, keep, false};
}

std::pair<unsigned, std::string> ProxyServer::Impl::readyz(std::string_view raw_query) const {
  const cache::QueryValues query = cache::QueryValues::parse(raw_query);
  auto excluded = [&query](std::string_view name) {
    for (const auto& [key, value] : query.pairs()) {
      if (key == "exclude" && value == name) return true;
    }
    return false;
  };
  const watch::UpstreamHealth* health = upstream.health();
  struct Check {
    const char* name;
    bool ok;
    std::string why;
  };
  const Check checks[] = {
      {"ping", true, ""},
      {"shutdown", !stopping, "the server is shutting down"},
      {"informer-sync", !ready || ready(), "configured resources have not synced yet"},
      // Cached reads keep being served while the upstream is down; a probe that should
      // keep the proxy in rotation then uses /readyz?exclude=upstream.
      {"upstream", !health || health->up(), health ? "unreachable: " + health->lastError() : ""},
  };
  std::string lines;
  bool ok = true;
  for (const Check& check : checks) {
    if (excluded(check.name)) {
      lines += fmt::format("[+]{} excluded: ok\n", check.name);
      continue;
    }
    ok = ok && check.ok;
    if (check.ok) {
      lines += fmt::format("[+]{} ok\n", check.name);
    } else {
      // As kube-apiserver: the reason goes to the log, not to whoever asks (/readyz needs
      // no credentials, and the upstream's error names addresses and certificates).
      lines += fmt::format("[-]{} failed: reason withheld\n", check.name);
      spdlog::debug("readyz check {} failed: {}", check.name, check.why);
    }
  }
  if (!ok) return {500, lines + "readyz check failed\n"};
  if (parseBoolParam(query.get("verbose"))) return {200, lines + "readyz check passed\n"};
  return {200, "ok"};
}

std::optional<WriteSyncTarget> ProxyServer::Impl::writeSyncTarget(const DownstreamRequest& req) {
  if (!registry || !req.info.is_resource_request) return std::nullopt;
  if (!options.write_sync && options.write_sync_resources.empty()) return std::nullopt;
  const std::string display = req.info.api_group.empty() ? req.info.resource : req.info.resource + "." + req.info.api_group;
  bool on = options.write_sync;
  if (auto it = options.write_sync_resources.find(display); it != options.write_sync_resources.end()) on = it->second;
  if (!on) return std::nullopt;
  const size_t qmark = req.target.find('?');
  const cache::QueryValues query = cache::QueryValues::parse(
      qmark == std::string::npos ? std::string_view{} : std::string_view(req.target).substr(qmark + 1));
  if (!isObjectWrite(req.info, query)) return std::nullopt;
  // The namespace object is cluster-scoped: /api/v1/namespaces/<n> names it, not a namespace.
  const bool namespace_object = req.info.api_group.empty() && req.info.resource == "namespaces";
  std::shared_ptr<watch::CachedResource> cached = registry->findRunning(
      req.info.api_group, req.info.api_version, req.info.resource, namespace_object ? "" : req.info.namespace_);
  if (!cached || !cached->hasSynced()) return std::nullopt;
  std::string ns = cached->resource().namespaced ? req.info.namespace_ : "";
  return WriteSyncTarget{std::move(cached), std::move(ns), options.write_sync_timeout, metrics};
}

asio::awaitable<std::optional<ForwardOutcome>> ProxyServer::Impl::serveFromCache(DownstreamRequest& req,
                                                                                  Worker& worker,
                                                                                  SessionControl& control) {
  if (!registry || !req.info.is_resource_request || !req.info.subresource.empty()) co_return std::nullopt;
  if (requestsImpersonation(req.headers)) {
    metrics.cachePassThrough(resourceLabel(req.info), "impersonation");
    co_return std::nullopt;
  }
  CacheContext ctx{*registry, worker.pool, control, options, metrics};
  if (req.info.verb == "get" || req.info.verb == "list") co_return co_await serveCachedRead(req, ctx);
  if (req.info.verb == "watch") co_return co_await serveCachedWatch(req, ctx);
  co_return std::nullopt;
}

asio::awaitable<void> ProxyServer::Impl::runSession(SessionPtr session, Worker& worker) {
  worker.sessions.insert(session);
  metrics.connectionOpened();
  error_code ec;
  const auto remote = session->stream.socket().remote_endpoint(ec);
  const std::string client_ip = ec ? "" : remote.address().to_string();
  bool first = true;
  try {
    if (TlsStream* tls_stream = session->stream.tls()) {
      session->stream.expires_after(options.read_header_timeout);
      co_await tls_stream->async_handshake(asio::ssl::stream_base::server, redirect_error(use_awaitable, ec));
      session->stream.expires_never();
      if (ec) throw std::runtime_error("TLS handshake: " + ec.message());
      if (auto identity = auth::certificateIdentity(tls_stream->native_handle(), options.refused_certificate_groups)) {
        session->certificate_user = std::move(identity->user);
        session->certificate_not_after = identity->not_after;
      }
    }
    // `stopping` covers a connection accepted just before stop(), whose
    // session was not yet registered when stop() marked the others.
    while (!session->control.stopping && !stopping) {
      DownstreamParser parser;
      parser.header_limit(static_cast<uint32_t>(options.max_header_bytes + kHeaderSlackBytes));
      parser.body_limit(kUnlimitedBody);  // pass-through bodies stream; the upstream limits them
      session->idle = true;
      if (!first && session->buffer.size() == 0) {
        // Go's IdleTimeout: a keep-alive connection may wait this long for the
        // first byte of its next request; the head then has the read-header timeout.
        session->stream.expires_after(options.idle_timeout);
        const size_t n = co_await session->stream.async_read_some(session->buffer.prepare(kIdlePeekBytes),
                                                                  redirect_error(use_awaitable, ec));
        session->buffer.commit(n);
        if (ec) break;  // idle timeout, client closed, or shutdown: closed without an answer, as Go does
      }
      // The whole head within the read-header timeout, however slowly it trickles
      // in (slowloris); on expiry the connection closes without an answer, as Go's.
      session->stream.expires_after(options.read_header_timeout);
      co_await http::async_read_header(session->stream, session->buffer, parser, redirect_error(use_awaitable, ec));
      session->idle = false;
      first = false;
      if (ec) {
        const bool quiet = ec == http::error::end_of_stream || ec == asio::error::eof ||
                           ec == beast::error::timeout || ec == asio::error::operation_aborted ||
                           ec == http::error::partial_message || ec == asio::error::connection_reset;
        if (!quiet) {
          const std::string& answer = ec == http::error::header_limit ? kHeaderTooLarge : kBadRequest;
          spdlog::debug("bad request from {}: {}", client_ip, ec.message());
          co_await writeDownstream(session->stream, answer, options.write_timeout);
        }
        break;
      }
      session->stream.expires_never();
      const auto start = std::chrono::steady_clock::now();
      DownstreamRequest req{session->stream, session->buffer, parser};
      req.method = std::move(parser.method);
      req.target = std::move(parser.target);
      req.headers = std::move(parser.headers);
      req.info = RequestInfo::parse(req.method, req.target);
      req.client_ip = client_ip;
      req.keep_alive = parser.keep_alive();
      req.http10 = parser.version < 11;

      // Per-client attribution: the bytes this connection writes from now on, the
      // request, and the watch while it is open.
      ClientMetrics& client = metrics.client(findHeader(req.headers, "User-Agent"));
      session->stream.tcp().rate_policy().client = &client;
      struct WatchHeld {
        ClientMetrics* client;
        ~WatchHeld() {
          if (client) client->watchClosed();
        }
      } watch_held{req.info.verb == "watch" ? &client : nullptr};
      if (watch_held.client) client.watchOpened();

      const bool local = isLocalPath(req.info.path);
      const char* served_by = "upstream";
      ForwardOutcome outcome;
      bool cacheable = true;
      std::optional<ForwardOutcome> refused;
      if (filterRefuses(req)) refused = co_await refuseFiltered(req);
      // The apiserver's max-in-flight bound, taken before any review is spent on the
      // request; long-running requests (watches, exec...) are bounded by their own.
      ClientLimiter::Slot request_slot;
      const bool overloaded = !refused && !local && !isLongRunning(req.info) && request_limiter.limited() &&
                              !(request_slot = request_limiter.tryAcquire(""));
      if (overloaded) metrics.limitRefused("requests");
      if (!refused && !overloaded && gateway && !isHealthPath(req.info.path)) {
        refused = co_await admitGatewayRequest(req, *session, worker, cacheable);
      }
      // Held until this watch ends, cached or passed through. Keyed by the authenticated
      // user in gateway mode, else by the client's address.
      ClientLimiter::Slot watch_slot;
      const bool too_many =
          overloaded || (!refused && !local && req.info.verb == "watch" && watch_limiter.limited() &&
                         !(watch_slot = watch_limiter.tryAcquire(req.caller.empty() ? client_ip : req.caller)));
      if (refused) {
        served_by = "proxy";
        outcome = *refused;
      } else if (local) {
        served_by = "proxy";
        outcome = co_await serveLocal(req);
      } else if (too_many) {
        served_by = "proxy";
        if (!overloaded) metrics.limitRefused("watches");
        const bool keep = req.keep_alive && req.parser.is_done() && !stopping;
        co_await writeDownstream(req.stream, tooManyRequestsAnswer(keep), options.write_timeout);
        outcome = ForwardOutcome{429, keep, false};
      } else if (auto cached = cacheable ? co_await serveFromCache(req, worker, session->control) : std::nullopt) {
        served_by = "cache";
        outcome = *cached;
      } else {
        const std::optional<WriteSyncTarget> sync = writeSyncTarget(req);
        outcome = co_await forwardToUpstream(req, worker.pool, session->control, options, sync ? &*sync : nullptr);
      }
      if (outcome.code != 0) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        metrics.observeRequest(req.info.verb, resourceLabel(req.info), outcome.code, served_by, seconds,
                               outcome.long_running);
        client.requestAnswered();
        logAccess(req.method, req.target, outcome.code, served_by, seconds, client_ip,
                  std::string(findHeader(req.headers, "User-Agent")));
      }
      if (!outcome.keep_connection) break;
    }
  } catch (const std::exception& e) {
    spdlog::debug("connection from {} ended: {}", client_ip, e.what());
  }
  session->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  session->stream.close();
  worker.sessions.erase(session);
  metrics.connectionClosed();
  sessionEnded();
}

ProxyServer::ProxyServer(ServerOptions server, UpstreamOptions upstream)
    : impl_(std::make_unique<Impl>(std::move(server), upstream)) {}

ProxyServer::~ProxyServer() { stop(std::chrono::milliseconds(0)); }

void ProxyServer::setReadinessCheck(std::function<bool()> ready) { impl_->ready = std::move(ready); }

void ProxyServer::setInformerRegistry(std::shared_ptr<watch::InformerRegistry> registry) {
  impl_->registry = std::move(registry);
}

void ProxyServer::setUpstreamHealth(std::shared_ptr<watch::UpstreamHealth> health) {
  impl_->upstream.setHealth(std::move(health));
}

namespace io {

asio::awaitable<bool> awaitStore(std::function<bool()> done, std::chrono::steady_clock::time_point deadline,
                                 std::chrono::microseconds first, std::chrono::microseconds longest) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  auto interval = first;
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) co_return false;
    timer.expires_at(std::min(deadline, now + interval));
    error_code ec;
    co_await timer.async_wait(redirect_error(use_awaitable, ec));
    interval = std::min(interval * 2, longest);
  }
  co_return true;
}

asio::awaitable<bool> awaitResourceVersion(const cache::ThreadSafeStore& store, uint64_t rv,
                                           std::chrono::steady_clock::time_point deadline) {
  co_return co_await awaitStore([&store, rv] { return store.currentRV() >= rv; }, deadline,
                                std::chrono::microseconds(500), std::chrono::milliseconds(20));
}

}  // namespace io

void ProxyServer::start() {
  Impl& s = *impl_;
  const int threads = std::max(1, s.options.io_threads);
  if (!s.options.tls_cert_file.empty()) s.tls = std::make_unique<ServingTls>(s.options);
  if (s.options.gateway) {
    s.gateway = std::make_unique<auth::GatewayAuth>(auth::GatewayAuthOptions{
        s.options.authentication_cache_ttl, s.options.authorization_cache_ttl, s.options.auth_cache_max_entries});
  }
  for (int i = 0; i < threads; ++i) s.workers.push_back(std::make_unique<Worker>(s.upstream, s.options));
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(s.options.listen_host), s.options.listen_port);
  s.acceptor = std::make_unique<asio::ip::tcp::acceptor>(s.workers[0]->ctx);
  s.acceptor->open(endpoint.protocol());
  s.acceptor->set_option(asio::socket_base::reuse_address(true));
  s.acceptor->bind(endpoint);
  // The kernel's maximum (SOMAXCONN): bursts of reconnecting informers must not
  // hit SYN retries (see the backlog measurement in toolchain notes).
  s.acceptor->listen(asio::socket_base::max_listen_connections);
  s.host = s.acceptor->local_endpoint().address().to_string();
  s.port = s.acceptor->local_endpoint().port();
  asio::co_spawn(s.workers[0]->ctx, s.acceptLoop(), asio::detached);
  for (auto& worker : s.workers) {
    worker->thread = std::thread([&ctx = worker->ctx] {
      // An exception escaping a handler must not end the event loop.
      while (true) {
        try {
          ctx.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("io thread caught: {}", e.what());
        }
      }
    });
  }
  s.started = true;
}

const std::string& ProxyServer::listenHost() const { return impl_->host; }
uint16_t ProxyServer::listenPort() const { return impl_->port; }
ProxyMetrics& ProxyServer::metrics() { return impl_->metrics; }

void ProxyServer::stop(std::chrono::milliseconds drain) {
  Impl& s = *impl_;
  if (!s.started || s.stopping.exchange(true)) return;
  asio::post(s.workers[0]->ctx, [&s] {
    error_code ignored;
    s.acceptor->close(ignored);
  });
  for (auto& worker : s.workers) {
    asio::post(worker->ctx, [w = worker.get()] {
      error_code ignored;
      for (const auto& session : w->sessions) {
        session->control.stopping = true;
        if (session->idle) {
          session->stream.cancel();
        } else if (session->control.streaming && session->control.active) {
          session->control.active->close();
        } else if (session->control.streaming && session->control.interrupt) {
          session->control.interrupt();
        }
      }
      w->pool.closeAll();
    });
  }
  {
    std::unique_lock lock(s.drain_mu);
    s.drained.wait_for(lock, drain, [&s] { return s.open_sessions == 0; });
    if (s.open_sessions != 0) spdlog::warn("stopping with {} connections still open", s.open_sessions);
  }
  for (auto& worker : s.workers) {
    worker->guard.reset();
    worker->ctx.stop();
  }
  for (auto& worker : s.workers) {
    if (worker->thread.joinable()) worker->thread.join();
  }
  // Coroutines still suspended are destroyed with their io_context; drop our
  // references first so each Session dies while its io_context still exists.
  for (auto& worker : s.workers) worker->sessions.clear();
  s.acceptor.reset();
  s.workers.clear();
}

}  // namespace proxy
