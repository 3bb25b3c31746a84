#pragma once
// Counters and gauges of one resource's store, read by /metrics. Names follow the
// Prometheus conventions the proxy exports them under (counters end in _total).

#include <atomic>
#include <cstdint>

namespace cache {

struct StoreStats {
  // Gauges.
  std::atomic<uint64_t> objects{0};
  std::atomic<uint64_t> json_bytes{0};      // bytes of JSON of the current objects
  std::atomic<uint64_t> overhead_bytes{0};  // object structs, metadata, map chunks, indexes
  std::atomic<uint64_t> history_events{0};
  std::atomic<uint64_t> history_json_bytes{0};  // JSON held only by the history (old versions)
  std::atomic<uint64_t> history_packed_bytes{0};     // heap of the old versions kept packed
  std::atomic<uint64_t> history_packed_versions{0};  // how many old versions are packed
  std::atomic<uint64_t> packed_objects{0};  // current objects kept deflated (--store-encoding compressed)
  std::atomic<uint64_t> packed_bytes{0};    // their deflated bytes
  // Counters. What the store was fed (events, bookmarks, relists, RVs refused) the
  // reflector counts (watch/reflector/reflector_stats.h); these are what only the store sees.
  std::atomic<uint64_t> history_evictions_total{0};
  std::atomic<uint64_t> snapshots_built_total{0};
  std::atomic<uint64_t> historical_snapshots_built_total{0};
};

}  // namespace cache
