#pragma once
// ProxyServer: the downstream HTTP/1.1 server. It answers /healthz, /livez,
// /readyz and /metrics itself and forwards every other request to the upstream
// apiserver unchanged (see passthrough in docs/design/server.md).
//
// Runs `ServerOptions::io_threads` event loops; connections are spread over them
// round-robin and never cross threads. Methods are not thread-safe with respect
// to each other: call them from the owning thread (main). stop() may block up to
// its drain budget.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cache/clock.h"
#include "proxy/server/server_options.h"
#include "proxy/observability/status_page.h"
#include "proxy/upstream/upstream_options.h"

namespace watch {
class InformerRegistry;
class UpstreamHealth;
}

namespace proxy {

class ProxyMetrics;

class ProxyServer {
 public:
  // Builds the upstream TLS context; throws std::exception on bad PEM material. `clock`
  // times requests, waits and deadlines; it outlives the server.
  ProxyServer(ServerOptions server, UpstreamOptions upstream,
              const cache::Clock& clock = cache::RealClock::instance());
  ~ProxyServer();  // stops with no drain if still running
  ProxyServer(const ProxyServer&) = delete;
  ProxyServer& operator=(const ProxyServer&) = delete;

  // /readyz answers 200 only while `ready` returns true (and the server is not
  // stopping). Without a check, /readyz is ready once started. Call before start().
  void setReadinessCheck(std::function<bool()> ready);
  // What /debug/status shows (proxy/observability/status_page.h). Call before start().
  void setStatusSource(StatusSource status);
  // Resource requests the registry has a synced cache for are answered from it (see
  // docs/routing.md); without a registry everything passes through. Call before start().
  void setInformerRegistry(std::shared_ptr<watch::InformerRegistry> registry);
  // The upstream breaker (watch/upstream_health.h): pass-through reports to it, fails
  // fast while it is open, and /readyz shows it as the "upstream" check. Call before start().
  void setUpstreamHealth(std::shared_ptr<watch::UpstreamHealth> health);

  // Binds, listens and starts the io threads. Throws std::exception on failure.
  void start();
  const std::string& listenHost() const;
  uint16_t listenPort() const;  // the bound port, also when 0 was asked for

  // Stops accepting, ends chunked streams with their terminating chunk, closes
  // idle connections, waits up to `drain` for in-flight requests, then stops
  // the io threads. Idempotent.
  void stop(std::chrono::milliseconds drain = std::chrono::milliseconds(3000));

  ProxyMetrics& metrics();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace proxy
