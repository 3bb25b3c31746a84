#pragma once
// The metrics read at scrape time: per cached resource from the informers' stats, and of
// the upstream from its health breaker. watch/ and cache/ keep these values in atomics
// without knowing prometheus; this collector turns them into families of
// metric_families.h at each GET /metrics.

#include <memory>

#include "proxy/observability/proxy_metrics.h"

namespace watch {
class InformerManager;
class UpstreamHealth;
}  // namespace watch

namespace proxy {

// Holds both for as long as the collector lives. `health` may be null (no samples).
MetricsCollector cacheMetricsCollector(std::shared_ptr<watch::InformerManager> manager,
                                       std::shared_ptr<watch::UpstreamHealth> health);

}  // namespace proxy
