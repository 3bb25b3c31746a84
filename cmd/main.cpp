// Composition root: reads the configuration, maps it onto each module's own
// options, runs the server and handles the shutdown signals (style.md §3).
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

#include <spdlog/spdlog.h>

#include "config/config.h"
#include "config/config_error.h"
#include "config/environment.h"
#include "informers.h"
#include "proxy/observability/logging.h"
#include "proxy/server/proxy_server.h"
#include "proxy/server/server_options.h"
#include "proxy/observability/status_page.h"
#include "proxy/upstream/upstream_options.h"

namespace {

proxy::UpstreamOptions upstreamOptions(const config::UpstreamConfig& c) {
  proxy::UpstreamOptions o;
  o.scheme = c.scheme;
  o.host = c.host;
  o.port = c.port;
  o.path_prefix = c.path_prefix;
  o.ca_pem = c.ca_pem;
  o.insecure_skip_tls_verify = c.insecure_skip_tls_verify;
  o.tls_server_name = c.tls_server_name;
  o.client_cert_pem = c.client_cert_pem;
  o.client_key_pem = c.client_key_pem;
  o.bearer_token = c.bearer_token;
  o.bearer_token_file = c.bearer_token_file;
  o.connect_timeout = c.connect_timeout;
  return o;
}

proxy::ServerOptions serverOptions(const config::Config& c) {
  proxy::ServerOptions o;
  o.listen_host = c.listen.host;
  o.listen_port = c.listen.port;
  if (c.io_threads > 0) o.io_threads = static_cast<int>(c.io_threads);
  o.watch_bookmark_interval = c.watch_bookmark_interval;
  o.watch_max_lifetime = c.watch_max_lifetime;
  o.unsynced_watch_timeout = c.unsynced_watch_timeout;
  o.watch_queue_capacity = c.watch_queue_capacity;
  o.gateway = c.mode == config::Mode::Gateway;
  o.tls_cert_file = c.tls_cert_file;
  o.tls_key_file = c.tls_private_key_file;
  o.client_ca_file = c.client_ca_file;
  o.refused_certificate_groups = c.refuse_client_cert_groups;
  o.authentication_cache_ttl = c.authentication_cache_ttl;
  o.authorization_cache_ttl = c.authorization_cache_ttl;
  o.auth_cache_max_entries = c.auth_cache_size;
  o.write_sync = c.write_sync;
  o.write_sync_timeout = c.write_sync_timeout;
  o.read_from_cache = c.read_policy == config::ReadPolicy::Cache;
  for (const config::CacheResourceConfig& resource : c.cache_resources) {
    if (resource.write_sync) o.write_sync_resources[resource.resource.toString()] = *resource.write_sync;
    if (resource.read_policy) {
      o.read_from_cache_resources[resource.resource.toString()] = *resource.read_policy == config::ReadPolicy::Cache;
    }
  }
  o.max_request_body_bytes = c.max_request_body_bytes;
  o.max_header_bytes = c.max_header_bytes;
  o.read_header_timeout = c.read_header_timeout;
  o.idle_timeout = c.idle_timeout;
  o.cache_start_wait = c.cache_start_wait;
  o.discovery_cache_ttl = c.discovery_cache_ttl;
  o.max_watches_per_client = c.max_watches_per_client;
  o.max_inflight_watches = c.max_inflight_watches;
  o.max_requests_inflight = c.max_requests_inflight;
  o.max_inflight_reviews = c.max_inflight_reviews;
  o.max_connections = c.max_connections ? *c.max_connections : proxy::defaultMaxConnections();
  o.max_connections_per_client = c.max_connections_per_client;
  o.http2 = c.http2;
  o.gzip_loopback = c.gzip_loopback;
  o.http2_max_streams = static_cast<uint32_t>(c.http2_max_streams_per_connection);
  o.request_filter = {c.request_filter.accept_hosts, c.request_filter.accept_paths, c.request_filter.reject_paths,
                      c.request_filter.reject_methods};
  return o;
}

proxy::LoggingOptions loggingOptions(const config::Config& c) {
  return {c.log_format == config::LogFormat::Json ? proxy::LogFormat::Json : proxy::LogFormat::Text, c.verbosity};
}

// Waits for the second of SIGTERM/SIGINT while `done` is false; a second signal
// during the drain exits at once, like Redis does.
void exitOnSecondSignal(const sigset_t& signals, const std::atomic<bool>& done) {
  const timespec poll{0, 50 * 1000 * 1000};
  while (!done) {
    if (sigtimedwait(&signals, nullptr, &poll) > 0) {
      spdlog::warn("second signal, exiting immediately");
      std::_Exit(1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Block the shutdown signals before any thread starts, so that every thread
  // inherits the mask and only sigwait below ever sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  proxy::raiseOpenFileLimit();

  config::Config cfg;
  try {
    cfg = config::load(argc, argv, config::Environment::fromProcess());
  } catch (const config::ExitRequest& exit) {
    std::fputs(exit.text.c_str(), stdout);
    return exit.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }

  proxy::setupLogging(loggingOptions(cfg));
  for (const auto& warning : cfg.warnings) spdlog::warn("{}", warning);
  try {
    // Declared before the server: a request in flight may hold a cached resource, so
    // the informers outlive the server.
    cmd::Informers informers(cfg, upstreamOptions(cfg.upstream));
    proxy::ProxyServer server(serverOptions(cfg), upstreamOptions(cfg.upstream));
    const auto manager = informers.manager();
    server.setInformerRegistry(manager);
    server.setUpstreamHealth(informers.health());
    server.setReadinessCheck([manager] { return manager->ready(); });
    server.metrics().setCollector(informers.metricsCollector());
    server.setStatusSource(proxy::cacheStatusSource(manager, informers.health(), &server.metrics()));
    manager->start();
    informers.startBackgroundTasks();
    server.start();
    const std::string& host = server.listenHost();
    const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    std::printf("listening on %s:%u\n", shown.c_str(), server.listenPort());
    std::fflush(stdout);
    spdlog::info("proxying to {}://{}:{}{} ({})", cfg.upstream.scheme, cfg.upstream.host, cfg.upstream.port,
                 cfg.upstream.path_prefix, cfg.upstream.origin);

    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("received signal {}, shutting down", sig);
    std::atomic<bool> stopped{false};
    // The drain leaves room inside the shutdown timeout for joining threads.
    const auto drain = cfg.shutdown_timeout * 3 / 5;
    std::thread stopper([&] {
      // The server first, so no new request finds an informer; downstream watches end
      // with it. Then the reflectors.
      server.stop(drain);
      informers.stop();  // the reflectors, then the state is saved (--state-dir)
      stopped = true;
    });
    exitOnSecondSignal(signals, stopped);
    stopper.join();
    spdlog::info("stopped");
  } catch (const std::exception& e) {
    spdlog::error("kube-cache-proxy: {}", e.what());
    return 1;
  }
  return 0;
}
