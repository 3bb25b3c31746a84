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
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cache/query_values.h"
#include "proxy/cache_serving.h"
#include "proxy/io_internal.h"
#include "proxy/logging.h"
#include "proxy/proxy_metrics.h"
#include "proxy/query_params.h"
#include "proxy/write_sync.h"
#include "watch/upstream_health.h"

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
      : options(std::move(server)), upstream(upstream_options, metrics) {}

  asio::awaitable<void> acceptLoop();
  asio::awaitable<void> runSession(SessionPtr session, Worker& worker);
  asio::awaitable<ForwardOutcome> serveLocal(DownstreamRequest& req);
  // /readyz the way the apiserver words it: one "[+]name ok" / "[-]name failed" line per
  // check (always on failure, on success with ?verbose), `exclude` skips checks.
  std::pair<unsigned, std::string> readyz(std::string_view raw_query) const;
  // The cache a write's answer waits for (read-your-writes), or nullopt.
  std::optional<WriteSyncTarget> writeSyncTarget(const DownstreamRequest& req);
  // The cache's answer, or nullopt to pass through.
  asio::awaitable<std::optional<ForwardOutcome>> serveFromCache(DownstreamRequest& req, Worker& worker,
                                                                SessionControl& control);
  void sessionEnded();

  const ServerOptions options;
  ProxyMetrics metrics;
  Upstream upstream;
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
    lines += check.ok ? fmt::format("[+]{} ok\n", check.name) : fmt::format("[-]{} failed: {}\n", check.name, check.why);
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
      session->stream.expires_after(first ? options.read_header_timeout : options.idle_timeout);
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
      if (local) {
        served_by = "proxy";
        outcome = co_await serveLocal(req);
      } else if (auto cached = co_await serveFromCache(req, worker, session->control)) {
        served_by = "cache";
        outcome = *cached;
      } else {
        const std::optional<WriteSyncTarget> sync = writeSyncTarget(req);
        outcome = co_await forwardToUpstream(req, worker.pool, session->control, options, sync ? &*sync : nullptr);
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

void ProxyServer::setUpstreamHealth(std::shared_ptr<watch::UpstreamHealth> health) {
  impl_->upstream.setHealth(std::move(health));
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
