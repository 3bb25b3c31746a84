#pragma once
// Counters and gauges of one reflector. Written by the reflector thread, read by /metrics
// and /readyz from any thread (relaxed atomics: each value is independent).

#include <atomic>
#include <cstdint>

namespace watch {

// How the reflector got its last full state.
enum class SyncMode : uint8_t {
  None = 0,       // not synced yet
  WatchList = 1,  // streaming list, sendInitialEvents (contract W9)
  List = 2,       // paged LIST (contract K1)
  Saved = 3,      // a saved state loaded at start-up (warm restart)
};

struct ReflectorStats {
  std::atomic<uint64_t> upstream_relists_total{0};         // full relists started
  std::atomic<uint64_t> upstream_list_pages_total{0};      // LIST pages received
  std::atomic<uint64_t> upstream_watch_restarts_total{0};  // watches opened after the first
  std::atomic<uint64_t> upstream_watch_list_fallbacks_total{0};  // watch-list given up for LIST
  std::atomic<uint64_t> upstream_backoffs_total{0};        // waits after a failure
  std::atomic<uint64_t> events_applied_total{0};           // ADDED/MODIFIED/DELETED applied
  std::atomic<uint64_t> bookmarks_total{0};                // bookmarks applied
  std::atomic<uint64_t> resource_version_backwards_total{0};
  std::atomic<uint64_t> malformed_events_total{0};          // undecodable lines or list bodies
  std::atomic<uint64_t> store_errors_total{0};              // store answers other than Ok
  std::atomic<uint64_t> loop_errors_total{0};               // exceptions caught by the loop
  std::atomic<uint64_t> last_sync_objects{0};               // objects in the last full state
  std::atomic<uint64_t> last_sync_resource_version{0};
  std::atomic<int64_t> last_sync_unix_ms{0};                // wall time of the last full state
  std::atomic<SyncMode> mode{SyncMode::None};
  std::atomic<bool> synced{false};                          // HasSynced
  std::atomic<bool> caught_up{false};                       // listed, or resumed and caught up
  std::atomic<uint64_t> warm_start_resource_version{0};     // RV of the saved state loaded; 0: none
  std::atomic<uint64_t> requested_relists_total{0};         // relists asked for (drift repair)
  // The full state being received (initial sync or relist), for progress on /debug/status:
  // wall time it started (0: none in progress), objects and bytes so far, and the count
  // expected (0: unknown; from the first page's remainingItemCount, else the last sync).
  std::atomic<int64_t> sync_started_unix_ms{0};
  std::atomic<uint64_t> sync_objects{0};
  std::atomic<uint64_t> sync_bytes{0};
  std::atomic<uint64_t> sync_expected_objects{0};
};

}  // namespace watch
