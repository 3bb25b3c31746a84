#include "informers.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>

#include "proxy/upstream/http_lister_watcher.h"

namespace cmd {
namespace {

// Relists after an upstream outage are spread out: a few at once, then two a second
// (client-go's lesson from kubernetes/kubernetes#86483).
constexpr double kRelistsPerSecond = 2;
constexpr double kRelistBurst = 5;

void logTo(watch::LogLevel level, std::string_view message) {
  switch (level) {
    case watch::LogLevel::Debug: spdlog::debug("{}", message); break;
    case watch::LogLevel::Info: spdlog::info("{}", message); break;
    case watch::LogLevel::Warning: spdlog::warn("{}", message); break;
    case watch::LogLevel::Error: spdlog::error("{}", message); break;
  }
}

std::string collectionPath(const watch::ApiResource& resource, const std::string& namespace_name) {
  std::string path = resource.group.empty() ? "/api/" + resource.version
                                            : "/apis/" + resource.group + "/" + resource.version;
  if (!namespace_name.empty()) path += "/namespaces/" + namespace_name;
  return path + "/" + resource.resource;
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

}  // namespace

Informers::Informers(const config::Config& config, const proxy::UpstreamOptions& upstream)
    : relist_limiter_(clock_, kRelistsPerSecond, kRelistBurst),
      health_(std::make_shared<watch::UpstreamHealth>(clock_)),
      connector_(std::make_shared<proxy::upstream::UpstreamConnector>(upstream)),
      discovery_(connector_) {
  connector_->setHealth(health_);
  health_->startProber([connector = connector_] { return connector->probe(); });
  auto factory = [connector = connector_](const watch::ApiResource& resource, const std::string& namespace_name) {
    return std::make_unique<proxy::upstream::HttpListerWatcher>(connector, collectionPath(resource, namespace_name));
  };
  watch::InformerManagerOptions options = managerOptions(config);
  options.reflector.upstream_health = health_.get();
  manager_ = std::make_shared<watch::InformerManager>(std::move(options), discovery_, factory, clock_,
                                                      relist_limiter_);
  watch::CacheBackgroundTasksOptions background;
  if (!config.state_dir.empty()) background.state_save_interval = config.state_save_interval;
  background.drift_check_interval = config.drift_check_interval;
  background.log = logTo;
  background_tasks_ = std::make_unique<watch::CacheBackgroundTasks>(background, *manager_, std::move(factory), clock_);
  save_on_stop_ = !config.state_dir.empty();
  if (save_on_stop_) {
    std::error_code error;
    std::filesystem::create_directories(config.state_dir, error);
    if (error) spdlog::warn("--state-dir {}: {}; state will not be saved", config.state_dir, error.message());
  }
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
  return [manager = manager_, health = health_] {
    struct Family {
      const char* name;
      const char* help;
      bool counter;
      double (*value)(const watch::Informer&);
    };
    static const Family kFamilies[] = {
        {"kube_cache_proxy_cache_objects", "Objects in the cache of a resource.", false,
         [](const watch::Informer& i) { return double(i.store().stats().objects.load()); }},
        {"kube_cache_proxy_cache_json_bytes", "Bytes of JSON of the cached objects.", false,
         [](const watch::Informer& i) { return double(i.store().stats().json_bytes.load()); }},
        {"kube_cache_proxy_cache_overhead_bytes", "Bytes besides the JSON: object structs, metadata, indexes.", false,
         [](const watch::Informer& i) { return double(i.store().stats().overhead_bytes.load()); }},
        {"kube_cache_proxy_cache_history_events", "Events in the watch history window.", false,
         [](const watch::Informer& i) { return double(i.store().stats().history_events.load()); }},
        {"kube_cache_proxy_cache_resource_version", "The resourceVersion the cache is synced to.", false,
         [](const watch::Informer& i) { return double(i.store().currentRV()); }},
        {"kube_cache_proxy_cache_synced", "1 once the first full state of the resource reached the cache.", false,
         [](const watch::Informer& i) { return i.hasSynced() ? 1.0 : 0.0; }},
        {"kube_cache_proxy_cache_relists_total", "Full relists from the upstream.", true,
         [](const watch::Informer& i) { return double(i.reflectorStats().upstream_relists_total.load()); }},
        {"kube_cache_proxy_cache_watch_restarts_total", "Upstream watches opened after the first.", true,
         [](const watch::Informer& i) { return double(i.reflectorStats().upstream_watch_restarts_total.load()); }},
        {"kube_cache_proxy_cache_events_applied_total", "Upstream ADDED/MODIFIED/DELETED events applied.", true,
         [](const watch::Informer& i) { return double(i.reflectorStats().events_applied_total.load()); }},
        {"kube_cache_proxy_cache_caught_up", "1 once the cache is as fresh as a list (after a warm start: the resumed watch caught up).", false,
         [](const watch::Informer& i) { return i.caughtUp() ? 1.0 : 0.0; }},
        {"kube_cache_proxy_cache_warm_start_resource_version", "RV of the saved state served at start-up; 0 without one.", false,
         [](const watch::Informer& i) { return double(i.reflectorStats().warm_start_resource_version.load()); }},
        {"kube_cache_proxy_cache_state_load_failures_total", "Saved state files refused (torn, corrupt, other version or resource).", true,
         [](const watch::Informer& i) { return i.stateStats() ? double(i.stateStats()->load_failures_total.load()) : 0.0; }},
        {"kube_cache_proxy_cache_state_saves_total", "States saved to --state-dir.", true,
         [](const watch::Informer& i) { return i.stateStats() ? double(i.stateStats()->saves_total.load()) : 0.0; }},
        {"kube_cache_proxy_cache_state_save_failures_total", "States that could not be saved.", true,
         [](const watch::Informer& i) { return i.stateStats() ? double(i.stateStats()->save_failures_total.load()) : 0.0; }},
        {"kube_cache_proxy_cache_drift_last_check_timestamp_seconds", "Unix time of the last drift check; 0 before the first.", false,
         [](const watch::Informer& i) { return double(i.driftStats().last_check_unix_seconds.load()); }},
        {"kube_cache_proxy_cache_drift_checks_total", "Drift checks that got an answer or failed.", true,
         [](const watch::Informer& i) { return double(i.driftStats().checks_total.load()); }},
        {"kube_cache_proxy_cache_drifts_total", "Drift checks that found the cache differing from the upstream (each relists).", true,
         [](const watch::Informer& i) { return double(i.driftStats().drifts_total.load()); }},
        {"kube_cache_proxy_cache_resource_version_backwards_total", "Upstream lists or events whose resourceVersion went backwards (each relists).", true,
         [](const watch::Informer& i) { return double(i.reflectorStats().resource_version_backwards_total.load()); }},
        {"kube_cache_proxy_cache_malformed_events_total", "Upstream watch lines or list bodies that could not be decoded (each relists).", true,
         [](const watch::Informer& i) { return double(i.reflectorStats().malformed_events_total.load()); }},
        {"kube_cache_proxy_cache_loop_errors_total", "Unexpected errors caught by the reflector's loop (it backs off and relists).", true,
         [](const watch::Informer& i) { return double(i.reflectorStats().loop_errors_total.load()); }},
        {"kube_cache_proxy_cache_history_evictions_total", "Events dropped from the front of the watch history window.", true,
         [](const watch::Informer& i) { return double(i.store().stats().history_evictions_total.load()); }},
        {"kube_cache_proxy_cache_watch_frames_encoded_total", "Events encoded for cached watches (once per event and format, shared by every watcher).", true,
         [](const watch::Informer& i) { return double(i.dispatcher().stats().frames_encoded_total.load()); }},
    };
    const auto informers = manager->informers();
    std::vector<proxy::CollectedFamily> out;
    for (const Family& family : kFamilies) {
      proxy::CollectedFamily collected{family.name, family.help, family.counter, {}};
      for (const auto& informer : informers) {
        collected.samples.push_back({{{"resource", informer->resource().displayName()},
                                      {"version", informer->resource().version},
                                      {"namespace", informer->namespaceScope()}},
                                     family.value(*informer)});
      }
      out.push_back(std::move(collected));
    }
    out.push_back({"kube_cache_proxy_upstream_up", "1 while the upstream apiserver is reachable, 0 during an outage.",
                   false, {{{}, health->up() ? 1.0 : 0.0}}});
    out.push_back({"kube_cache_proxy_upstream_outages_total", "Times the upstream apiserver was found unreachable.",
                   true, {{{}, double(health->outages())}}});
    out.push_back({"kube_cache_proxy_upstream_connection_failures_total",
                   "Connections to the upstream apiserver that got no answer.", true,
                   {{{}, double(health->failures())}}});
    out.push_back({"kube_cache_proxy_upstream_down_seconds", "Seconds the current upstream outage has lasted (0 when up).",
                   false, {{{}, health->downSeconds()}}});
    return out;
  };
}

}  // namespace cmd
