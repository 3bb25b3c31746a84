#pragma once
// The informer side of the process: discovery, the informer manager and what they
// share (clocks, the relist limiter, one upstream connector), built from the
// configuration. Declared before the server in main so that it outlives every request
// that may still hold a cached resource.

#include <memory>

#include "cache/clock.h"
#include "config/config.h"
#include "proxy/observability/proxy_metrics.h"
#include "proxy/upstream/http_discovery.h"
#include "proxy/upstream/upstream_connector.h"
#include "proxy/upstream/upstream_options.h"
#include "watch/cache_background_tasks.h"
#include "watch/informer_manager.h"
#include "watch/reflector/relist_limiter.h"
#include "watch/upstream_health.h"

namespace cmd {

class Informers {
 public:
  // Throws std::exception for unusable upstream TLS material.
  Informers(const config::Config& config, const proxy::UpstreamOptions& upstream);
  Informers(const Informers&) = delete;
  Informers& operator=(const Informers&) = delete;

  std::shared_ptr<watch::InformerManager> manager() const { return manager_; }
  // Starts state saving and drift checks (when configured); call after manager()->start().
  void startBackgroundTasks();
  // Shutdown: stops the background tasks and the informers, then saves every cached resource's
  // state to --state-dir (when set) for the next start.
  void stop();
  // The upstream breaker the reflectors, discovery and the server share.
  std::shared_ptr<watch::UpstreamHealth> health() const { return health_; }
  // Per-resource cache metrics for /metrics.
  proxy::MetricsCollector metricsCollector() const;

 private:
  cache::RealClock clock_;
  watch::TokenBucketRelistLimiter relist_limiter_;
  std::shared_ptr<watch::UpstreamHealth> health_;
  std::shared_ptr<proxy::upstream::UpstreamConnector> connector_;
  proxy::upstream::HttpDiscovery discovery_;
  std::shared_ptr<watch::InformerManager> manager_;
  std::unique_ptr<watch::CacheBackgroundTasks> background_tasks_;
  bool save_on_stop_ = false;
};

}  // namespace cmd
