#include "informers.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <utility>

#include "cache/state/state_file.h"
#include "proxy/observability/cache_metrics.h"
#include "proxy/upstream/cluster_identity.h"
#include "proxy/upstream/http_lister_watcher.h"

namespace cmd {
namespace {

// Relists after an upstream outage are spread out: a few at once, then two a second
// (client-go's lesson from kubernetes/kubernetes#86483).
constexpr double kRelistsPerSecond = 2;
constexpr double kRelistBurst = 5;
// Reading the upstream's identity for saved state holds up the start at most this long.
constexpr auto kClusterIdentityTimeout = std::chrono::seconds(10);

void logTo(watch::LogLevel level, std::string_view message) {
  switch (level) {
    case watch::LogLevel::Debug: spdlog::debug("{}", message); break;
    case watch::LogLevel::Info: spdlog::info("{}", message); break;
    case watch::LogLevel::Warning: spdlog::warn("{}", message); break;
    case watch::LogLevel::Error: spdlog::error("{}", message); break;
  }
}

std::vector<cache::SelectableField> indexPaths(const config::CacheResourceConfig& resource) {
  std::vector<cache::SelectableField> out;
  for (const auto& [name, path] : resource.indexes) {
    cache::SelectableField field{name, {}};
    std::istringstream parts(path);
    for (std::string part; std::getline(parts, part, '.');) field.path.push_back(part);
    out.push_back(std::move(field));
  }
  return out;
}

watch::InformerManagerOptions managerOptions(const config::Config& c) {
  watch::InformerManagerOptions o;
  for (const config::GroupResource& resource : c.cache) {
    watch::ConfiguredResource configured;
    configured.group = resource.group;
    configured.resource = resource.resource;
    for (const config::CacheResourceConfig& options : c.cache_resources) {
      if (options.resource != resource) continue;
      configured.namespaces = options.namespaces;
      configured.strip_managed_fields = options.strip_managed_fields;
      configured.index_paths = indexPaths(options);
    }
    o.configured.push_back(std::move(configured));
  }
  for (const config::GroupResource& resource : c.no_cache) o.deny.push_back({resource.group, resource.resource});
  o.on_demand = c.cache_on_demand;
  o.idle_timeout = c.cache_idle_timeout;
  // Idle stops are checked at least a few times per idle timeout.
  o.housekeeping_interval = std::clamp<std::chrono::milliseconds>(c.cache_idle_timeout / 4, std::chrono::milliseconds(50),
                                                                  std::chrono::seconds(1));
  o.log = logTo;
  o.reflector.log = logTo;
  o.state_dir = c.state_dir;
  return o;
}

// Warm restart's trust (cache/state/state_file.h): the directory 0700, the key, and the upstream's
// identity read now, so a state file of another cluster is refused.
cache::StateFileOptions stateFileOptions(const config::Config& c, proxy::upstream::UpstreamConnector& connector) {
  cache::StateFileOptions o;
  o.key = c.state_key;
  if (auto dir = cache::prepareStateDirectory(c.state_dir); !dir) {
    spdlog::warn("--state-dir: {}; state will not be saved", dir.error().message);
  } else if (!dir->empty()) {
    spdlog::warn("--state-dir: {}", *dir);
  }
  const proxy::upstream::ClusterIdentity identity = proxy::upstream::readClusterIdentity(connector, kClusterIdentityTimeout);
  o.upstream = identity.upstream;
  if (o.upstream.cluster_uid.empty()) {
    spdlog::warn("saved state is neither loaded nor saved: the upstream's cluster identity is unknown ({})", identity.error);
  } else {
    spdlog::info("saved state is for {} (cluster {}){}", o.upstream.server, o.upstream.cluster_uid,
                 o.key.empty() ? "" : ", sealed with --state-key-file");
  }
  return o;
}

}  // namespace

Informers::Informers(const config::Config& config, const proxy::UpstreamOptions& upstream)
    : relist_limiter_(clock_, kRelistsPerSecond, kRelistBurst),
      health_(std::make_shared<watch::UpstreamHealth>(clock_)),
      connector_(std::make_shared<proxy::upstream::UpstreamConnector>(upstream)),
      discovery_(connector_) {
  connector_->setHealth(health_);
  health_->startProber([connector = connector_] { return connector->probe(); });
  auto factory = [connector = connector_](const watch::ApiResource& resource, const std::string& namespace_name) {
    const std::string path = watch::collectionPath(resource.group, resource.version, resource.resource, namespace_name);
    return std::make_unique<proxy::upstream::HttpListerWatcher>(connector, path);
  };
  watch::InformerManagerOptions options = managerOptions(config);
  if (!config.state_dir.empty()) options.state_file = stateFileOptions(config, *connector_);
  options.reflector.upstream_health = health_.get();
  manager_ = std::make_shared<watch::InformerManager>(std::move(options), discovery_, factory, clock_,
                                                      relist_limiter_);
  watch::CacheBackgroundTasksOptions background;
  if (!config.state_dir.empty()) background.state_save_interval = config.state_save_interval;
  background.drift_check_interval = config.drift_check_interval;
  background.pack_history = config.store_encoding != config::StoreEncoding::Plain;
  background.pack_current = config.store_encoding == config::StoreEncoding::Compressed;
  background.log = logTo;
  background_tasks_ = std::make_unique<watch::CacheBackgroundTasks>(background, *manager_, std::move(factory), clock_);
  save_on_stop_ = !config.state_dir.empty();
}

void Informers::startBackgroundTasks() { background_tasks_->start(); }

void Informers::stop() {
  background_tasks_->stop();
  // Held past the manager's stop: the stores stay readable, and stopped reflectors
  // leave each one final at its RV.
  const auto informers = manager_->informers();
  manager_->stop();
  if (!save_on_stop_) return;
  const auto started = clock_.now();
  const size_t saved = watch::CacheBackgroundTasks::saveAll(informers);
  const std::chrono::duration<double> took = clock_.now() - started;
  spdlog::info("saved the state of {} cached resources in {:.2f} s", saved, took.count());
}

proxy::MetricsCollector Informers::metricsCollector() const {
  return proxy::cacheMetricsCollector(manager_, health_);
}

}  // namespace cmd
