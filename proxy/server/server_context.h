#pragma once
// Internal to the server's event-loop code (proxy_server.cpp, session.cpp): what a
// ProxyServer shares with every connection it serves, and the event loops that serve them.
//
// ServerContext is built once and outlives every io thread. Fields are set before start()
// and read-only afterwards, except the thread-safe members (metrics, limiters, decision
// caches, flights, `stopping`) and the drain count (guarded by drain_mu).

#include <atomic>
#include <condition_variable>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include <boost/asio/executor_work_guard.hpp>

#include "proxy/asio_beast.h"
#include "proxy/auth/failure_limiter.h"
#include "proxy/auth/gateway_auth.h"
#include "proxy/auth/gateway_reviewer.h"
#include "proxy/auth/review_flights.h"
#include "proxy/auth/user_info.h"
#include "proxy/reads/cache_serving.h"
#include "proxy/server/client_limiter.h"
#include "proxy/server/flow_limiter.h"
#include "proxy/server/flow_seat.h"
#include "proxy/server/heap_scavenger.h"
#include "proxy/http/downstream_stream.h"
#include "proxy/observability/proxy_metrics.h"
#include "proxy/server/request_filter.h"
#include "proxy/observability/resource_labels.h"
#include "proxy/server/server_options.h"
#include "proxy/server/serving_tls.h"
#include "proxy/server/session_control.h"
#include "proxy/observability/status_page.h"
#include "proxy/upstream/upstream.h"
#include "proxy/upstream/upstream_options.h"
#include "proxy/upstream/upstream_pool.h"

namespace watch {
class InformerRegistry;
}

namespace proxy::io {

// One client connection, or one stream of an HTTP/2 connection: what shutdown controls
// (worker.sessions) and whose client certificate authenticates. Touched only by its io
// thread.
struct Session {
  Session(asio::ip::tcp::socket&& socket, std::shared_ptr<asio::ssl::context> tls)
      : stream(std::move(socket), tls) {
    certificate.verified_with = std::move(tls);
  }
  // One stream of the HTTP/2 connection `connection`, which outlives it: its bytes are the
  // connection's (no transport here), so is the client certificate. Shutdown interrupts
  // its long-running answer through `control`, as a connection's.
  struct Http2StreamOf {
    const Session& connection;
  };
  explicit Session(Http2StreamOf of)
      : awaiting_first_request(false), opened_at(of.connection.opened_at), certificate(of.connection.certificate) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  DownstreamStream stream;
  beast::flat_buffer buffer;
  SessionControl control;
  // Go's connection states, as shutdown treats them: `idle` (waiting for the next request
  // after an answer) is closed at once; `awaiting_first_request` (accepted, no head read
  // yet: StateNew) gets its first request served unless it has been open for
  // kNewConnectionGrace, like net/http's Shutdown.
  bool idle = false;
  bool awaiting_first_request = true;
  std::chrono::steady_clock::time_point opened_at;  // the server clock's, at accept
  auth::ConnectionCertificate certificate;  // a verified client certificate's identity
  ClientLimiter::Slot connection_slot;             // held for the connection's lifetime
};
using SessionPtr = std::shared_ptr<Session>;

// One event loop with its own upstream connections.
struct Worker {
  Worker(Upstream& upstream, const ServerOptions& options, const cache::Clock& clock)
      : pool(upstream, ctx, options, clock), guard(asio::make_work_guard(ctx)) {}
  asio::io_context ctx{1};
  HeapScavenger scavenger{ctx};
  UpstreamPool pool;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  std::unordered_set<SessionPtr> sessions;  // live connections, for shutdown
  std::thread thread;
};

struct ServerContext {
  ServerContext(ServerOptions server, const UpstreamOptions& upstream_options, const cache::Clock& clock)
      : clock(clock),
        options(std::move(server)),
        request_filter(options.request_filter),
        upstream(upstream_options, metrics),
        watch_limiter(FlowBounds{.seats = options.max_inflight_watches,
                                 .reserve = options.max_inflight_watches / 4,
                                 .per_flow = options.max_watches_per_client}),
        connection_limiter(options.max_connections_per_client, options.max_connections),
        request_limiter(FlowBounds{.seats = options.max_requests_inflight,
                                   .reserve = options.max_requests_inflight / 4,
                                   .queue_per_flow = kSeatQueuePerFlow}),
        review_limiter(0, options.max_inflight_reviews),
        discovery(DiscoveryCacheOptions{options.discovery_cache_ttl}) {}
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  // A session counted by the accept loop has ended; wakes stop() at the last one.
  void sessionEnded() {
    std::lock_guard lock(drain_mu);
    if (--open_sessions == 0) drained.notify_all();
  }

  const cache::Clock& clock;
  const ServerOptions options;
  const RequestFilter request_filter;  // kubectl proxy's --accept-hosts and friends
  ProxyMetrics metrics;
  Upstream upstream;
  // Seats per flow (proxy/server/flow_limiter.h): a quarter of each bound is kept for
  // flows under their fair share, so one flow that holds its seats cannot push another out.
  FlowLimiter watch_limiter;         // watches, for as long as they run
  ClientLimiter connection_limiter;  // per client address
  FlowLimiter request_limiter;       // requests in flight that are not long-running
  ClientLimiter review_limiter;      // gateway reviews in flight upstream
  ResourceLabels resource_labels;
  std::function<bool()> ready;
  StatusSource status;  // /debug/status; unset: no cached resources to show
  std::shared_ptr<watch::InformerRegistry> registry;  // null: everything passes through
  std::unique_ptr<ServingTls> tls;                    // null: plain HTTP
  std::unique_ptr<auth::GatewayAuth> gateway;         // null: sidecar mode
  auth::ReviewFlights<auth::TokenReviewResult> token_flights;
  // Failed authentications per client address: 20 at once, then 2 per second.
  auth::FailureLimiter auth_failures{2.0, 20.0};
  auth::ReviewFlights<auth::AccessReviewResult> access_flights;
  DiscoveryCache discovery;  // discovery documents and /version (used with `registry`)
  DiscoveryFlights discovery_flights;
  std::atomic<bool> stopping{false};

  std::mutex drain_mu;
  std::condition_variable drained;
  size_t open_sessions = 0;  // guarded by drain_mu
};

}  // namespace proxy::io
