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
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "proxy/cache_serving.h"
#include "proxy/io_internal.h"
#include "proxy/logging.h"
#include "proxy/proxy_metrics.h"
#include "proxy/watch_limiter.h"

namespace proxy {
namespace {

using namespace io;
using asio::redirect_error;
using asio::use_awaitable;

// One client connection. Touched only by its io thread.
struct Session {
  explicit Session(asio::ip::tcp::socket&& socket) : stream(std::move(socket)) {}
  TcpStream stream;
  beast::flat_buffer buffer;
  SessionControl control;
  bool idle = true;  // waiting for the next request head
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

bool isLocalPath(const std::string& path) {
  return path == "/healthz" || path == "/livez" || path == "/readyz" || path == "/metrics";
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
        upstream(upstream_options, metrics),
        watch_limiter(options.max_watches_per_client, options.max_inflight_watches) {}

  asio::awaitable<void> acceptLoop();
  asio::awaitable<void> runSession(SessionPtr session, Worker& worker);
  asio::awaitable<ForwardOutcome> serveLocal(DownstreamRequest& req);
  // The cache's answer, or nullopt to pass through.
  asio::awaitable<std::optional<ForwardOutcome>> serveFromCache(DownstreamRequest& req, Worker& worker,
                                                                SessionControl& control);
  void sessionEnded();

  const ServerOptions options;
  ProxyMetrics metrics;
  Upstream upstream;
  WatchLimiter watch_limiter;
  std::function<bool()> ready;
  std::shared_ptr<watch::InformerRegistry> registry;  // null: everything passes through
  std::vector<std::unique_ptr<Worker>> workers;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor;  // runs on workers[0]
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
  while (true) {
    Worker& worker = *workers[next++ % workers.size()];
    error_code ec;
    asio::ip::tcp::socket socket =
        co_await acceptor->async_accept(worker.ctx, redirect_error(use_awaitable, ec));
    if (ec) {
      if (stopping || ec == asio::error::operation_aborted) co_return;
      // EMFILE and friends: keep accepting once descriptors free up.
      spdlog::warn("accept failed: {}", ec.message());
      continue;
    }
    socket.set_option(asio::ip::tcp::no_delay(true), ec);
    {
      std::lock_guard lock(drain_mu);
      ++open_sessions;
    }
    asio::co_spawn(worker.ctx, runSession(std::make_shared<Session>(std::move(socket)), worker), asio::detached);
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
  } else if (req.info.path == "/readyz" && (stopping || (ready && !ready()))) {
    code = 500;
    text = plainAnswer(code, "text/plain; charset=utf-8", "readyz check failed", keep, head_only);
  } else {
    text = plainAnswer(code, "text/plain; charset=utf-8", "ok", keep, head_only);
  }
  co_await writeDownstream(req.stream, text, options.write_timeout);
  co_return ForwardOutcome{code, keep, false};
}

asio::awaitable<std::optional<ForwardOutcome>> ProxyServer::Impl::serveFromCache(DownstreamRequest& req,
                                                                                  Worker& worker,
                                                                                  SessionControl& control) {
  if (!registry || !req.info.is_resource_request || !req.info.subresource.empty()) co_return std::nullopt;
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

      const bool local = isLocalPath(req.info.path);
      const char* served_by = "upstream";
      ForwardOutcome outcome;
      // Held until this watch ends, cached or passed through. Keyed by address:
      // with authentication the key becomes the authenticated user.
      WatchLimiter::Slot watch_slot;
      const bool refused = !local && req.info.verb == "watch" && watch_limiter.limited() &&
                           !(watch_slot = watch_limiter.tryAcquire(client_ip));
      if (local) {
        served_by = "proxy";
        outcome = co_await serveLocal(req);
      } else if (refused) {
        served_by = "proxy";
        const bool keep = req.keep_alive && req.parser.is_done() && !stopping;
        co_await writeDownstream(req.stream, tooManyRequestsAnswer(keep), options.write_timeout);
        outcome = ForwardOutcome{429, keep, false};
      } else if (auto cached = co_await serveFromCache(req, worker, session->control)) {
        served_by = "cache";
        outcome = *cached;
      } else {
        outcome = co_await forwardToUpstream(req, worker.pool, session->control, options);
      }
      if (outcome.code != 0) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        metrics.observeRequest(req.info.verb, req.info.resource, outcome.code, served_by, seconds, outcome.long_running);
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

namespace io {

asio::awaitable<bool> awaitResourceVersion(const cache::ThreadSafeStore& store, uint64_t rv,
                                           std::chrono::steady_clock::time_point deadline) {
  // Polls with a growing interval: the waits this serves (R7, C1 fences) are usually a
  // few milliseconds, and a timer costs nothing on the reflector's write path.
  asio::steady_timer timer(co_await asio::this_coro::executor);
  auto interval = std::chrono::microseconds(500);
  while (store.currentRV() < rv) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) co_return false;
    timer.expires_at(std::min(deadline, now + interval));
    error_code ec;
    co_await timer.async_wait(redirect_error(use_awaitable, ec));
    interval = std::min<std::chrono::microseconds>(interval * 2, std::chrono::milliseconds(20));
  }
  co_return true;
}

}  // namespace io

void ProxyServer::start() {
  Impl& s = *impl_;
  const int threads = std::max(1, s.options.io_threads);
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
