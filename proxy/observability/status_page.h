#pragma once
// /debug/status (issue 19): what an operator looks at instead of reading logs. One row per
// cached resource (state, objects, bytes, RV, when it last synced, watchers) and the
// upstream's health, as JSON (`Accept: application/json`, e.g. `kubectl get --raw
// /debug/status`) or as an HTML page that refreshes itself. The values are the same atomics
// /metrics reads at scrape time, read at request time; plain code, no Asio.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/media.h"

namespace watch {
class InformerManager;
class UpstreamHealth;
}  // namespace watch

namespace proxy {

class ProxyMetrics;

struct ResourceStatus {
  std::string resource;  // "pods", "deployments.apps"
  std::string version;
  std::string namespace_scope;  // "" = all namespaces
  std::string encoding;         // "json", "protobuf"
  // "syncing" (no full state yet), "relisting" (a new full state while the old one
  // answers), "synced", "catching up" (resumed from saved state or a watch restart, not yet
  // at the upstream's present), "forbidden" (the upstream refused the list), "upstream down".
  std::string state;
  bool on_demand = false;
  uint64_t objects = 0;
  uint64_t json_bytes = 0;      // the objects' stored bytes
  uint64_t overhead_bytes = 0;  // the store's own bytes beside them
  uint64_t resource_version = 0;
  uint64_t events_applied = 0;
  uint64_t relists = 0;
  uint64_t watch_restarts = 0;
  double last_sync_unix = 0;  // 0: never
  uint64_t last_sync_objects = 0;
  size_t watchers = 0;  // downstream watches served from this cache
  // The full state being received, while state is syncing or relisting.
  bool sync_in_progress = false;
  uint64_t sync_objects = 0;
  uint64_t sync_bytes = 0;
  uint64_t sync_expected_objects = 0;  // 0: unknown
  double sync_seconds = 0;
  // GET/LIST/WATCH of the resource (by plural, across groups and encodings) answered from
  // memory and passed through, and the commonest reasons the cache let one pass.
  uint64_t reads_from_cache = 0;
  uint64_t reads_passed_through = 0;
  std::vector<std::pair<std::string, uint64_t>> top_pass_reasons;  // at most 3, most first
};

struct NotCachedStatus {
  std::string resource;  // "deployments.apps"
  std::string version;
  std::string reason;
};

struct StatusReport {
  bool upstream_up = true;
  double upstream_down_seconds = 0;
  double now_unix = 0;
  std::vector<ResourceStatus> resources;
  std::vector<NotCachedStatus> not_cached;
};

using StatusSource = std::function<StatusReport()>;

// Reads the informers', the breaker's and the request counters' state at each call.
// `health` and `metrics` may be null; `metrics` must outlive the source.
StatusSource cacheStatusSource(std::shared_ptr<watch::InformerManager> manager,
                               std::shared_ptr<watch::UpstreamHealth> health, const ProxyMetrics* metrics);

// True when the request's Accept asks for JSON rather than a page for a browser.
bool wantsJsonStatus(const AcceptHeader& accept);

std::string renderStatusJson(const StatusReport& report);
std::string renderStatusHtml(const StatusReport& report);

}  // namespace proxy
