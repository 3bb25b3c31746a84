#pragma once
// Every metric family the proxy exposes on /metrics, declared once: name, help and type.
// This is the one way a metric comes to exist. A family's samples reach the exposition in
// one of two ways, chosen by where its value lives:
// - pushed: ProxyMetrics registers the family with prometheus-cpp from this table and the
//   request path increments it (requests, latencies, refusals...);
// - read at scrape: cache_metrics.cpp reads the value from the informers' atomic stats
//   (objects, bytes, relists...), which watch/ and cache/ keep without knowing prometheus.
// docs/metrics.md documents each family; test_operator_docs.py checks it against a scrape.

#include <string_view>

namespace proxy::metric {

enum class Type { Counter, Gauge, Histogram };

struct Family {
  std::string_view name;
  std::string_view help;
  Type type;
};

// ---- Pushed by the request path (proxy_metrics.cpp).
inline constexpr Family kRequests{"kube_cache_proxy_requests_total",
                                  "Requests answered, by verb, resource, code and origin.", Type::Counter};
inline constexpr Family kRequestDuration{"kube_cache_proxy_request_duration_seconds",
                                         "Time to the end of the response for requests that are not long-running.",
                                         Type::Histogram};
inline constexpr Family kUpstreamErrors{"kube_cache_proxy_upstream_errors_total",
                                        "Failures reaching the upstream apiserver.", Type::Counter};
inline constexpr Family kOpenConnections{"kube_cache_proxy_open_connections", "Open downstream client connections.",
                                         Type::Gauge};
inline constexpr Family kHttp2Connections{"kube_cache_proxy_http2_connections_total",
                                          "Downstream connections served as HTTP/2, by how it was chosen.",
                                          Type::Counter};
inline constexpr Family kHttp2Streams{"kube_cache_proxy_http2_streams_total",
                                      "Requests served on HTTP/2 streams.", Type::Counter};
inline constexpr Family kDiscoveryRequests{
    "kube_cache_proxy_discovery_requests_total",
    "Discovery and /version GETs the discovery cache looked at, by outcome.", Type::Counter};
inline constexpr Family kLimitRefusals{
    "kube_cache_proxy_limit_refusals_total",
    "Connections closed and requests answered 429 because a bound was reached, by bound.", Type::Counter};
inline constexpr Family kConnectionTimeouts{
    "kube_cache_proxy_connection_timeouts_total",
    "Connections closed without an answer at the idle or read-header timeout, by timeout.", Type::Counter};
inline constexpr Family kOpenStreams{"kube_cache_proxy_open_streams",
                                     "Open long-running responses: watches, unbounded streams, upgrades.",
                                     Type::Gauge};
inline constexpr Family kCachedWatchers{"kube_cache_proxy_cached_watchers", "Open watches served from the cache.",
                                        Type::Gauge};
inline constexpr Family kCachedWatchEventsSent{"kube_cache_proxy_cached_watch_events_sent_total",
                                               "Events and bookmarks written to watches served from the cache.",
                                               Type::Counter};
inline constexpr Family kCachedWatchersTerminatedSlow{"kube_cache_proxy_cached_watchers_terminated_slow_total",
                                                      "Cached watches closed because their client did not keep up.",
                                                      Type::Counter};
inline constexpr Family kClientRequests{"kube_cache_proxy_client_requests_total",
                                        "Requests answered, by the client's User-Agent product token.",
                                        Type::Counter};
inline constexpr Family kClientWatches{"kube_cache_proxy_client_watches",
                                       "Open watches, by the client's User-Agent product token.", Type::Gauge};
inline constexpr Family kClientResponseBytes{"kube_cache_proxy_client_response_bytes_total",
                                             "Bytes written to clients, by the client's User-Agent product token.",
                                             Type::Counter};
inline constexpr Family kUpstreamFailedFast{
    "kube_cache_proxy_upstream_failed_fast_total",
    "Requests answered 503 at once because the upstream apiserver was known to be unreachable.", Type::Counter};
inline constexpr Family kGatewayDecisions{
    "kube_cache_proxy_gateway_decisions_total",
    "Gateway authentication and authorization decisions, by review, source (cache, shared, upstream) and outcome.",
    Type::Counter};
inline constexpr Family kWriteSyncHeld{
    "kube_cache_proxy_write_sync_held_total",
    "Write answers held until the cache showed the write (outcome shown, timeout, skipped).", Type::Counter};
inline constexpr Family kWriteSyncWait{"kube_cache_proxy_write_sync_wait_seconds",
                                       "Time a held write answer waited for the cache to show the write.",
                                       Type::Histogram};
inline constexpr Family kFreshnessProbes{
    "kube_cache_proxy_freshness_probes_total",
    "Freshness probes, by resource and outcome: fence (the store reached the upstream's revision), metadata (the "
    "store matched a consistent metadata list), unproven (the requests passed through), shared (a request answered "
    "by another's probe).",
    Type::Counter};
inline constexpr Family kFreshnessProbeSeconds{"kube_cache_proxy_freshness_probe_seconds",
                                               "Time from a freshness probe's upstream request to its answer.",
                                               Type::Histogram};
inline constexpr Family kCachePassThrough{"kube_cache_proxy_cache_passthrough_total",
                                          "Cacheable reads and watches that passed through, by resource and reason.",
                                          Type::Counter};

// ---- Read at scrape from the informers and the upstream health (cache_metrics.cpp).
// Per cached resource (one informer), labelled resource, version, namespace and encoding
// ("json" or "protobuf": a resource read in both has an informer for each):
inline constexpr Family kCacheObjects{"kube_cache_proxy_cache_objects", "Objects in the cache of a resource.",
                                      Type::Gauge};
inline constexpr Family kCacheJsonBytes{"kube_cache_proxy_cache_json_bytes", "Bytes of JSON of the cached objects.",
                                        Type::Gauge};
inline constexpr Family kCacheOverheadBytes{"kube_cache_proxy_cache_overhead_bytes",
                                            "Bytes besides the JSON: object structs, metadata, indexes.", Type::Gauge};
inline constexpr Family kCacheHistoryEvents{"kube_cache_proxy_cache_history_events",
                                            "Events in the watch history window.", Type::Gauge};
inline constexpr Family kCacheResourceVersion{"kube_cache_proxy_cache_resource_version",
                                              "The resourceVersion the cache is synced to.", Type::Gauge};
inline constexpr Family kCacheSynced{"kube_cache_proxy_cache_synced",
                                     "1 once the first full state of the resource reached the cache.", Type::Gauge};
inline constexpr Family kCacheRelists{"kube_cache_proxy_cache_relists_total", "Full relists from the upstream.",
                                      Type::Counter};
inline constexpr Family kCacheWatchRestarts{"kube_cache_proxy_cache_watch_restarts_total",
                                            "Upstream watches opened after the first.", Type::Counter};
inline constexpr Family kCacheEventsApplied{"kube_cache_proxy_cache_events_applied_total",
                                            "Upstream ADDED/MODIFIED/DELETED events applied.", Type::Counter};
inline constexpr Family kCacheCaughtUp{
    "kube_cache_proxy_cache_caught_up",
    "1 once the cache is as fresh as a list (after a warm start: the resumed watch caught up).", Type::Gauge};
inline constexpr Family kCacheWarmStartResourceVersion{"kube_cache_proxy_cache_warm_start_resource_version",
                                                       "RV of the saved state served at start-up; 0 without one.",
                                                       Type::Gauge};
inline constexpr Family kCacheStateLoadFailures{
    "kube_cache_proxy_cache_state_load_failures_total",
    "Saved state files refused (torn, corrupt, other version, resource or upstream, not sealed with the key).",
    Type::Counter};
inline constexpr Family kCacheStateSaves{"kube_cache_proxy_cache_state_saves_total", "States saved to --state-dir.",
                                         Type::Counter};
inline constexpr Family kCacheStateSaveFailures{"kube_cache_proxy_cache_state_save_failures_total",
                                                "States that could not be saved.", Type::Counter};
inline constexpr Family kCacheDriftLastCheck{"kube_cache_proxy_cache_drift_last_check_timestamp_seconds",
                                             "Unix time of the last drift check; 0 before the first.", Type::Gauge};
inline constexpr Family kCacheDriftChecks{"kube_cache_proxy_cache_drift_checks_total",
                                          "Drift checks that got an answer or failed.", Type::Counter};
inline constexpr Family kCacheDrifts{"kube_cache_proxy_cache_drifts_total",
                                     "Drift checks that found the cache differing from the upstream (each relists).",
                                     Type::Counter};
inline constexpr Family kCacheResourceVersionBackwards{
    "kube_cache_proxy_cache_resource_version_backwards_total",
    "Upstream lists or events whose resourceVersion went backwards (each relists).", Type::Counter};
inline constexpr Family kCacheMalformedEvents{
    "kube_cache_proxy_cache_malformed_events_total",
    "Upstream watch lines or list bodies that could not be decoded (each relists).", Type::Counter};
inline constexpr Family kCacheLoopErrors{
    "kube_cache_proxy_cache_loop_errors_total",
    "Unexpected errors caught by the reflector's loop (it backs off and relists).", Type::Counter};
inline constexpr Family kCacheHistoryEvictions{"kube_cache_proxy_cache_history_evictions_total",
                                               "Events dropped from the front of the watch history window.",
                                               Type::Counter};
inline constexpr Family kCacheWatchFramesEncoded{
    "kube_cache_proxy_cache_watch_frames_encoded_total",
    "Events encoded for cached watches (once per event and format, shared by every watcher).", Type::Counter};
inline constexpr Family kCacheHistoryJsonBytes{
    "kube_cache_proxy_cache_history_json_bytes",
    "Bytes of JSON held only by the watch history window (old versions of objects).", Type::Gauge};
inline constexpr Family kCacheHistoryPackedBytes{
    "kube_cache_proxy_cache_history_packed_bytes",
    "Heap bytes of the old versions the watch history keeps packed (--store-encoding history, compressed).", Type::Gauge};
inline constexpr Family kCacheHistoryPackedVersions{
    "kube_cache_proxy_cache_history_packed_versions",
    "Old versions the watch history keeps packed (--store-encoding history, compressed).", Type::Gauge};
inline constexpr Family kCachePackedObjects{
    "kube_cache_proxy_cache_packed_objects",
    "Current objects kept packed (--store-encoding compressed).", Type::Gauge};
inline constexpr Family kCachePackedBytes{
    "kube_cache_proxy_cache_packed_bytes",
    "Packed bytes of the current objects kept packed (--store-encoding compressed).", Type::Gauge};
inline constexpr Family kCacheSnapshotsBuilt{"kube_cache_proxy_cache_snapshots_built_total",
                                             "Snapshots built for reads (shared by the reads at one RV).",
                                             Type::Counter};
inline constexpr Family kCacheHistoricalSnapshotsBuilt{
    "kube_cache_proxy_cache_historical_snapshots_built_total",
    "Snapshots of a past RV rebuilt from the history (Exact reads, continue tokens).", Type::Counter};
inline constexpr Family kCacheListPages{"kube_cache_proxy_cache_list_pages_total",
                                        "LIST pages received from the upstream.", Type::Counter};
inline constexpr Family kCacheWatchListFallbacks{
    "kube_cache_proxy_cache_watch_list_fallbacks_total",
    "Times the upstream did not complete a watch-list and the reflector fell back to paged LIST.", Type::Counter};
inline constexpr Family kCacheBackoffs{"kube_cache_proxy_cache_backoffs_total",
                                       "Backoff waits of the reflector after a failure.", Type::Counter};
inline constexpr Family kCacheBookmarks{"kube_cache_proxy_cache_bookmarks_total",
                                        "Upstream bookmarks applied (they advance the cache's RV).", Type::Counter};
inline constexpr Family kCacheStoreErrors{"kube_cache_proxy_cache_store_errors_total",
                                          "Lists and events the store refused (each relists).", Type::Counter};
inline constexpr Family kCacheRequestedRelists{"kube_cache_proxy_cache_requested_relists_total",
                                               "Relists asked for from outside the reflector (drift repair).",
                                               Type::Counter};
inline constexpr Family kCacheLastSyncObjects{"kube_cache_proxy_cache_last_sync_objects",
                                              "Objects in the last full state received from the upstream.",
                                              Type::Gauge};
inline constexpr Family kCacheLastSyncTimestamp{"kube_cache_proxy_cache_last_sync_timestamp_seconds",
                                                "Unix time of the last full state received; 0 before the first.",
                                                Type::Gauge};
inline constexpr Family kCacheWatchCandidatesVisited{
    "kube_cache_proxy_cache_watch_candidates_visited_total",
    "Watchers looked at to deliver events (the index's candidates, not every watcher).", Type::Counter};
inline constexpr Family kCacheWatchersEndedByRelist{
    "kube_cache_proxy_cache_watchers_ended_by_relist_total",
    "Cached watches ended because a relist changed the cache (their clients resume, get 410 and relist).",
    Type::Counter};
// Of the process, unlabelled:
inline constexpr Family kCompressedRunBytes{
    "kube_cache_proxy_compressed_run_bytes",
    "Bytes of list items kept deflated for gzip'd LISTs (made on the first such LIST of a chunk).", Type::Gauge};
// Of the upstream, unlabelled:
inline constexpr Family kUpstreamUp{"kube_cache_proxy_upstream_up",
                                    "1 while the upstream apiserver is reachable, 0 during an outage.", Type::Gauge};
inline constexpr Family kUpstreamOutages{"kube_cache_proxy_upstream_outages_total",
                                         "Times the upstream apiserver was found unreachable.", Type::Counter};
inline constexpr Family kUpstreamConnectionFailures{"kube_cache_proxy_upstream_connection_failures_total",
                                                    "Connections to the upstream apiserver that got no answer.",
                                                    Type::Counter};
inline constexpr Family kUpstreamDownSeconds{"kube_cache_proxy_upstream_down_seconds",
                                             "Seconds the current upstream outage has lasted (0 when up).",
                                             Type::Gauge};

}  // namespace proxy::metric
