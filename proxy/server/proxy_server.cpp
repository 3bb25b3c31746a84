// ProxyServer: the acceptor and the io threads, start and stop. Each accepted connection
// becomes a Session served by its own coroutine (proxy/server/session.cpp) on one io thread.
#include "proxy/server/proxy_server.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "proxy/asio_beast.h"
#include "proxy/auth/gateway_auth.h"
#include "proxy/http2/http2_limits.h"
#include "proxy/server/server_context.h"
#include "proxy/server/serving_tls.h"
#include "proxy/server/session.h"
#include "proxy/upstream/upstream_connection.h"

namespace proxy {
namespace {

using io::Session;
using io::SessionPtr;
using io::Worker;

// net/http's Shutdown closes a connection that has not sent its first request only once it
// has been open this long; a younger one gets its request served (with Connection: close).
constexpr std::chrono::seconds kNewConnectionGrace{5};

// On `worker`'s thread, at shutdown: ends `session` when its grace runs out, unless its
// first request head has arrived by then.
void closeUnlessRequestArrives(Worker& worker, const SessionPtr& session, const cache::Clock& clock) {
  const auto age = clock.now() - session->opened_at;
  const auto left = age >= kNewConnectionGrace ? std::chrono::steady_clock::duration::zero() : kNewConnectionGrace - age;
  auto timer = std::make_shared<boost::asio::steady_timer>(worker.ctx, left);
  timer->async_wait([timer, weak = std::weak_ptr<Session>(session)](const boost::system::error_code&) {
    if (auto alive = weak.lock(); alive && alive->awaiting_first_request) alive->stream.cancel();
  });
}

}  // namespace

using namespace io;
using asio::redirect_error;
using asio::use_awaitable;

// What the server shares with its sessions (ServerContext), plus the listener and the
// io threads, which only start() and stop() touch.
struct ProxyServer::Impl : ServerContext {
  using ServerContext::ServerContext;

  asio::awaitable<void> acceptLoop();
  // Wraps an accepted socket in a session, unless its client is over the connection bound.
  void startSession(asio::ip::tcp::socket&& socket, Worker& worker);

  std::vector<std::unique_ptr<Worker>> workers;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor;  // runs on workers[0]
  std::string host;
  uint16_t port = 0;
  bool started = false;
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
    startSession(std::move(socket), worker);
  }
}

void ProxyServer::Impl::startSession(asio::ip::tcp::socket&& socket, Worker& worker) {
  error_code ec;
  ClientLimiter::Slot connection_slot;
  if (connection_limiter.limited()) {
    const auto remote = socket.remote_endpoint(ec);
    connection_slot = connection_limiter.tryAcquire(ec ? "" : remote.address().to_string());
    if (!connection_slot) {
      // Closed before a byte is read: the client sees a reset and retries later, as
      // from a server out of descriptors, which is what this bound prevents.
      metrics.limitRefused("connections");
      socket.close(ec);
      return;
    }
  }
  socket.set_option(asio::ip::tcp::no_delay(true), ec);
  {
    std::lock_guard lock(drain_mu);
    ++open_sessions;
  }
  auto session = std::make_shared<Session>(std::move(socket), tls ? tls->current() : nullptr);
  session->connection_slot = std::move(connection_slot);
  session->opened_at = clock.now();
  asio::co_spawn(worker.ctx, runSession(*this, std::move(session), worker), asio::detached);
}

ProxyServer::ProxyServer(ServerOptions server, UpstreamOptions upstream, const cache::Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(server), upstream, clock)) {}

ProxyServer::~ProxyServer() { stop(std::chrono::milliseconds(0)); }

void ProxyServer::setReadinessCheck(std::function<bool()> ready) { impl_->ready = std::move(ready); }
void ProxyServer::setStatusSource(StatusSource status) { impl_->status = std::move(status); }

void ProxyServer::setInformerRegistry(std::shared_ptr<watch::InformerRegistry> registry) {
  impl_->registry = std::move(registry);
}

void ProxyServer::setUpstreamHealth(std::shared_ptr<watch::UpstreamHealth> health) {
  impl_->upstream.setHealth(std::move(health));
}

void ProxyServer::start() {
  Impl& s = *impl_;
  const int threads = std::max(1, s.options.io_threads);
  if (!s.options.tls_cert_file.empty()) s.tls = std::make_unique<ServingTls>(s.options, s.clock);
  if (s.options.gateway) {
    s.gateway = std::make_unique<auth::GatewayAuth>(auth::GatewayAuthOptions{
        s.options.authentication_cache_ttl, s.options.authorization_cache_ttl, s.options.auth_cache_max_entries});
  }
  for (int i = 0; i < threads; ++i) s.workers.push_back(std::make_unique<Worker>(s.upstream, s.options, s.clock));
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(s.options.listen_host), s.options.listen_port);
  s.acceptor = std::make_unique<asio::ip::tcp::acceptor>(s.workers[0]->ctx);
  s.acceptor->open(endpoint.protocol());
  s.acceptor->set_option(asio::socket_base::reuse_address(true));
  error_code bind_error;
  s.acceptor->bind(endpoint, bind_error);
  if (bind_error) {
    // What the operator reads first when the port is taken: what, where, and what to do.
    throw std::runtime_error("cannot listen on " + s.options.listen_host + ":" + std::to_string(s.options.listen_port) +
                             ": " + bind_error.message() +
                             (bind_error == asio::error::address_in_use
                                  ? " (another process holds it: stop it or pick another address with --listen)"
                                  : " (pick an address of this host with --listen)"));
  }
  // The kernel's maximum (SOMAXCONN): bursts of reconnecting informers must not
  // hit SYN retries (see the backlog measurement in toolchain notes).
  s.acceptor->listen(asio::socket_base::max_listen_connections);
  s.host = s.acceptor->local_endpoint().address().to_string();
  s.port = s.acceptor->local_endpoint().port();
  if (s.options.http2) spdlog::info("{}", io::describeHttp2Limits(io::http2Limits(s.options)));
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
    asio::post(worker->ctx, [w = worker.get(), &clock = s.clock] {
      error_code ignored;
      for (const auto& session : w->sessions) {
        session->control.stopping = true;
        if (session->idle) {
          session->stream.cancel();
        } else if (session->awaiting_first_request) {
          closeUnlessRequestArrives(*w, session, clock);
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
