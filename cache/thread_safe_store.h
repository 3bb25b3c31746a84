#pragma once
// ThreadSafeStore: everything one cached resource knows. The current object per key,
// secondary indexes, the resourceVersion, the event history and snapshots.
//
// Writer contract: one writer thread (the reflector's event consumer) calls apply(),
// replace() and bookmark() in upstream order. Each event is applied exactly once; an RV
// that does not move forward is refused with an error (counted) so the caller can
// relist, and the store is left unchanged.
//
// Reader contract: any number of threads call the const methods concurrently with the
// writer. Every read sees the state between two writes, never half of a replace().
// Locks are held only to copy pointers out; callers serialize after returning.
//
// What apply()/replace() return is what the caller hands to the dispatcher after the call
// returns (no callback runs under the store lock).

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "cache/change_signal.h"
#include "cache/chunked_object_map.h"
#include "cache/clock.h"
#include "cache/event_history.h"
#include "cache/indexer.h"
#include "cache/result.h"
#include "cache/snapshot.h"
#include "cache/store_stats.h"

namespace cache {

struct StoreOptions {
  EventHistoryOptions history;
  std::vector<IndexDefinition> indexes = {indexes::byNamespace(), indexes::byLabels()};
  // Historical snapshots kept for reuse (consecutive pages of one paginated LIST).
  size_t historical_snapshot_cache = 8;
};

// What a replace() found changed from the state before it (all zero for the first list,
// which is the starting state, not a change).
struct ReplaceResult {
  size_t added = 0;
  size_t modified = 0;
  size_t deleted = 0;
  bool changed() const { return added + modified + deleted > 0; }
};

class ThreadSafeStore {
 public:
  ThreadSafeStore(StoreOptions options, Clock& clock);
  ThreadSafeStore(const ThreadSafeStore&) = delete;
  ThreadSafeStore& operator=(const ThreadSafeStore&) = delete;

  // --- Writer (one thread) ---
  // Applies one ADDED/MODIFIED/DELETED event whose object carries the event RV (for
  // DELETED: the last state with the deletion RV, W3). Returns the history event.
  Result<WatchEvent> apply(EventType type, ObjectConstSharedPtr object);
  // Atomically makes `items` (a full list at `list_rv`) the state. When it differs from
  // the previous state (a relist after the watch broke), the differences happened at RVs
  // nobody here saw: they are not made into events, whose RVs would have to be invented
  // or shared (W11). The history restarts at `list_rv` instead (EventHistory::restart), so
  // a watch from an older RV is answered 410 and its client relists, as from the
  // apiserver after its cache was re-initialised; the caller ends the open watches.
  Result<ReplaceResult> replace(std::vector<ObjectConstSharedPtr> items, uint64_t list_rv);
  // Moves the RV forward without an event (upstream bookmark / progress notification).
  Result<void> bookmark(uint64_t rv);
  // Drops history older than its max age; returns how many events went.
  size_t evictExpiredHistory();
  // Packs up to `max_versions` superseded versions in the history (issue #20): finds them
  // under the shared lock, deflates them unlocked, swaps them in under the exclusive lock
  // for as long as one pointer assignment per version takes. Returns how many were
  // packed; call again while it returns max_versions. Any thread, one at a time.
  size_t packHistory(size_t max_versions);
  // Packs up to `max_objects` current objects (issue #20, --store-encoding compressed):
  // those no history event holds are packed (Object::packed), once: readers unpack into
  // buffers of their own (issue #37). Found under the shared lock, made unlocked, swapped
  // in (map, indexes) under the exclusive lock; the cached snapshots are dropped so that
  // they stop holding the replaced instances. Returns how many were found; call again
  // while it returns max_objects. Any thread, one at a time.
  size_t packCurrent(size_t max_objects);

  // --- Readers ---
  uint64_t currentRV() const { return current_rv_.load(std::memory_order_acquire); }
  // Notified after every write (apply, replace, bookmark), once the lock is released:
  // readers that wait for the store to reach an RV or show a write subscribe here and
  // re-check (proxy io::awaitChange) instead of polling or blocking a thread.
  const ChangeSignal& changes() const { return changes_; }
  // True once the first replace() happened (HasSynced).
  bool hasSynced() const { return synced_.load(std::memory_order_acquire); }

  ObjectConstSharedPtr get(std::string_view key) const;
  // Current objects with `value` in index `name`, in key order (P9).
  std::vector<ObjectConstSharedPtr> byIndex(std::string_view name, std::string_view value) const;
  bool hasIndex(std::string_view name) const;
  // Current objects named `name` in any namespace (and the cluster-scoped one), in key
  // order, with the RV they were read at: a `metadata.name=` field selector across
  // namespaces costs one key lookup per namespace the namespace index knows, instead of
  // a scan or a name index that would cost memory for every object. Without the
  // namespace index, nullopt (scan instead).
  struct NamedObjects {
    std::vector<ObjectConstSharedPtr> items;
    uint64_t resource_version = 0;
  };
  std::optional<NamedObjects> byName(std::string_view name) const;

  // The current state. Cheap: shares chunks with the live map.
  SnapshotConstSharedPtr snapshot() const;
  // The state at `rv` exactly (R3 Exact, P1 continue): Expired ("too old resource
  // version: N", R8) below the history window, TooLargeResourceVersion above currentRV().
  Result<SnapshotConstSharedPtr> snapshotAt(uint64_t rv) const;

  // Watch support (W4, W5): a cursor after `rv`, then batches of events from it.
  Result<HistoryCursor> watchCursor(uint64_t rv) const;
  Result<void> readEvents(HistoryCursor& cursor, size_t max_events, std::vector<WatchEvent>& out) const;
  uint64_t oldestResumableRV() const;

  const StoreStats& stats() const { return stats_; }

 private:
  // Notifies `signal` when it goes out of scope: declared before a write's lock, it runs
  // after the lock is released (locals are destroyed in reverse order).
  struct NotifyAfterUnlock {
    const ChangeSignal& signal;
    ~NotifyAfterUnlock() { signal.notify(); }
  };

  // Requires mu_ (shared or exclusive).
  SnapshotConstSharedPtr snapshotLocked() const;
  void setResourceVersionLocked(uint64_t rv);
  void refreshGaugesLocked();
  Unexpected regression(std::string_view what, uint64_t rv) const;

  StoreOptions options_;
  mutable StoreStats stats_;
  ChangeSignal changes_;

  // Lock order: mu_ before snapshot_mu_.
  mutable std::shared_mutex mu_;
  std::mutex pack_mu_;  // one packHistory or packCurrent at a time (before mu_ in the lock order)
  ChunkedObjectMap objects_;  // guarded by mu_
  Indexer indexer_;           // guarded by mu_; always matches objects_
  EventHistory history_;      // guarded by mu_
  // Incremented by every write before it touches objects_; guarded by mu_.
  uint64_t write_seq_ = 1;
  uint64_t overhead_bytes_ = 0;      // guarded by mu_: objects' overhead (indexes added on refresh)
  uint64_t json_bytes_ = 0;          // guarded by mu_
  uint64_t packed_bytes_ = 0;        // guarded by mu_: deflated bytes of packed current objects
  uint64_t packed_objects_ = 0;      // guarded by mu_
  // Guarded by pack_mu_: where packCurrent goes on scanning, the dictionary of the
  // current objects (made from the first one packed), and objects that did not shrink.
  std::string pack_cursor_;
  std::shared_ptr<const PackDictionary> current_dictionary_;
  std::unordered_set<const Object*> not_worth_packing_;

  // Snapshot cache. shared_seq_ is the write_seq_ of the newest snapshot: chunks born at
  // or before it may be shared and are copied before a write. Written by readers holding
  // mu_ shared plus snapshot_mu_; read by the writer holding mu_ exclusively.
  mutable std::mutex snapshot_mu_;
  mutable uint64_t shared_seq_ = 0;
  mutable SnapshotConstSharedPtr latest_snapshot_;
  mutable uint64_t latest_snapshot_seq_ = 0;
  mutable std::list<SnapshotConstSharedPtr> historical_snapshots_;  // most recent first

  std::atomic<uint64_t> current_rv_{0};
  std::atomic<bool> synced_{false};
};

}  // namespace cache
