#include "proxy/observability/cache_metrics.h"

#include "cache/packing/compressed_run.h"
#include "proxy/observability/metric_families.h"
#include "watch/informer_manager.h"
#include "watch/upstream_health.h"

namespace proxy {
namespace {

struct InformerFamily {
  const metric::Family& family;
  double (*value)(const watch::Informer&);
};

// One row per family of metric_families.h's per-resource section.
const InformerFamily kInformerFamilies[] = {
    {metric::kCacheObjects, [](const watch::Informer& i) { return double(i.store().stats().objects.load()); }},
    {metric::kCacheJsonBytes, [](const watch::Informer& i) { return double(i.store().stats().json_bytes.load()); }},
    {metric::kCacheOverheadBytes,
     [](const watch::Informer& i) { return double(i.store().stats().overhead_bytes.load()); }},
    {metric::kCacheHistoryEvents,
     [](const watch::Informer& i) { return double(i.store().stats().history_events.load()); }},
    {metric::kCacheResourceVersion, [](const watch::Informer& i) { return double(i.store().currentRV()); }},
    {metric::kCacheSynced, [](const watch::Informer& i) { return i.hasSynced() ? 1.0 : 0.0; }},
    {metric::kCacheRelists,
     [](const watch::Informer& i) { return double(i.reflectorStats().upstream_relists_total.load()); }},
    {metric::kCacheWatchRestarts,
     [](const watch::Informer& i) { return double(i.reflectorStats().upstream_watch_restarts_total.load()); }},
    {metric::kCacheEventsApplied,
     [](const watch::Informer& i) { return double(i.reflectorStats().events_applied_total.load()); }},
    {metric::kCacheCaughtUp, [](const watch::Informer& i) { return i.caughtUp() ? 1.0 : 0.0; }},
    {metric::kCacheWarmStartResourceVersion,
     [](const watch::Informer& i) { return double(i.reflectorStats().warm_start_resource_version.load()); }},
    {metric::kCacheStateLoadFailures,
     [](const watch::Informer& i) {
       return i.stateStats() ? double(i.stateStats()->load_failures_total.load()) : 0.0;
     }},
    {metric::kCacheStateSaves,
     [](const watch::Informer& i) { return i.stateStats() ? double(i.stateStats()->saves_total.load()) : 0.0; }},
    {metric::kCacheStateSaveFailures,
     [](const watch::Informer& i) {
       return i.stateStats() ? double(i.stateStats()->save_failures_total.load()) : 0.0;
     }},
    {metric::kCacheDriftLastCheck,
     [](const watch::Informer& i) { return double(i.driftStats().last_check_unix_seconds.load()); }},
    {metric::kCacheDriftChecks, [](const watch::Informer& i) { return double(i.driftStats().checks_total.load()); }},
    {metric::kCacheDrifts, [](const watch::Informer& i) { return double(i.driftStats().drifts_total.load()); }},
    {metric::kCacheResourceVersionBackwards,
     [](const watch::Informer& i) { return double(i.reflectorStats().resource_version_backwards_total.load()); }},
    {metric::kCacheMalformedEvents,
     [](const watch::Informer& i) { return double(i.reflectorStats().malformed_events_total.load()); }},
    {metric::kCacheLoopErrors,
     [](const watch::Informer& i) { return double(i.reflectorStats().loop_errors_total.load()); }},
    {metric::kCacheHistoryEvictions,
     [](const watch::Informer& i) { return double(i.store().stats().history_evictions_total.load()); }},
    {metric::kCacheWatchFramesEncoded,
     [](const watch::Informer& i) { return double(i.dispatcher().stats().frames_encoded_total.load()); }},
    {metric::kCacheHistoryJsonBytes,
     [](const watch::Informer& i) { return double(i.store().stats().history_json_bytes.load()); }},
    {metric::kCacheHistoryPackedBytes,
     [](const watch::Informer& i) { return double(i.store().stats().history_packed_bytes.load()); }},
    {metric::kCacheHistoryPackedVersions,
     [](const watch::Informer& i) { return double(i.store().stats().history_packed_versions.load()); }},
    {metric::kCachePackedObjects,
     [](const watch::Informer& i) { return double(i.store().stats().packed_objects.load()); }},
    {metric::kCachePackedBytes,
     [](const watch::Informer& i) { return double(i.store().stats().packed_bytes.load()); }},
    {metric::kCacheSnapshotsBuilt,
     [](const watch::Informer& i) { return double(i.store().stats().snapshots_built_total.load()); }},
    {metric::kCacheHistoricalSnapshotsBuilt,
     [](const watch::Informer& i) { return double(i.store().stats().historical_snapshots_built_total.load()); }},
    {metric::kCacheListPages,
     [](const watch::Informer& i) { return double(i.reflectorStats().upstream_list_pages_total.load()); }},
    {metric::kCacheWatchListFallbacks,
     [](const watch::Informer& i) { return double(i.reflectorStats().upstream_watch_list_fallbacks_total.load()); }},
    {metric::kCacheBackoffs,
     [](const watch::Informer& i) { return double(i.reflectorStats().upstream_backoffs_total.load()); }},
    {metric::kCacheBookmarks, [](const watch::Informer& i) { return double(i.reflectorStats().bookmarks_total.load()); }},
    {metric::kCacheStoreErrors,
     [](const watch::Informer& i) { return double(i.reflectorStats().store_errors_total.load()); }},
    {metric::kCacheRequestedRelists,
     [](const watch::Informer& i) { return double(i.reflectorStats().requested_relists_total.load()); }},
    {metric::kCacheLastSyncObjects,
     [](const watch::Informer& i) { return double(i.reflectorStats().last_sync_objects.load()); }},
    {metric::kCacheLastSyncTimestamp,
     [](const watch::Informer& i) { return double(i.reflectorStats().last_sync_unix_ms.load()) / 1000.0; }},
    {metric::kCacheWatchCandidatesVisited,
     [](const watch::Informer& i) { return double(i.dispatcher().stats().candidates_visited_total.load()); }},
    {metric::kCacheWatchersEndedByRelist,
     [](const watch::Informer& i) { return double(i.dispatcher().stats().watchers_ended_by_relist_total.load()); }},
};

}  // namespace

MetricsCollector cacheMetricsCollector(std::shared_ptr<watch::InformerManager> manager,
                                       std::shared_ptr<watch::UpstreamHealth> health) {
  return [manager = std::move(manager), health = std::move(health)] {
    const auto informers = manager->informers();
    std::vector<CollectedFamily> out;
    for (const InformerFamily& row : kInformerFamilies) {
      CollectedFamily collected{&row.family, {}};
      for (const auto& informer : informers) {
        collected.samples.push_back({{{"resource", informer->resource().displayName()},
                                      {"version", informer->resource().version},
                                      {"namespace", informer->namespaceScope()},
                                      {"encoding", std::string(cache::encodingName(informer->encoding()))}},
                                     row.value(*informer)});
      }
      out.push_back(std::move(collected));
    }
    out.push_back({&metric::kCompressedRunBytes, {{{}, double(cache::compressedRunBytes())}}});
    if (health) {
      out.push_back({&metric::kUpstreamUp, {{{}, health->up() ? 1.0 : 0.0}}});
      out.push_back({&metric::kUpstreamOutages, {{{}, double(health->outages())}}});
      out.push_back({&metric::kUpstreamConnectionFailures, {{{}, double(health->failures())}}});
      out.push_back({&metric::kUpstreamDownSeconds, {{{}, health->downSeconds()}}});
    }
    return out;
  };
}

}  // namespace proxy
