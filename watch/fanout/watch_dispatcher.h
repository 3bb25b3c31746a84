#pragma once
// WatchDispatcher: fans one resource's store events out to its downstream watches
// (issue #6). The informer owns one per store and the reflector side feeds it after each
// store write, outside the store's lock, in store order.
//
// - Encode once: each event is encoded at most once per delivery form (ADDED, MODIFIED,
//   DELETED, DELETED-of-previous) and the bytes are shared by every watcher sending it.
// - Indexed: a watcher requiring spec.nodeName=X, metadata.name=X or one namespace is only
//   looked at for events whose object (new or previous) has that value, so per-node
//   watchers cost O(interested) per event.
// - Never blocks on a client: pushes are non-blocking; a watcher whose bounded queue is
//   full is closed (counted) and its client resumes from its last RV.
// - No gap, no duplicate: registration and dispatch share one lock, and lastRV() is
//   advanced only after every event at or below it was queued, so a new watcher replays
//   history up to the RV it registered at and receives everything after it live.
//
// Thread-safe.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "cache/clock.h"
#include "cache/event_history.h"
#include "cache/snapshot.h"
#include "cache/thread_safe_store.h"
#include "watch/fanout/cache_watcher.h"
#include "watch/fanout/event_encoder.h"

namespace watch {

struct WatchDispatcherStats {
  // Watchers looked at for an event (index candidates): O(interested), not O(all).
  std::atomic<uint64_t> candidates_visited_total{0};
  std::atomic<uint64_t> frames_encoded_total{0};
  // Watchers ended because a relist changed the store (onRelist).
  std::atomic<uint64_t> watchers_ended_by_relist_total{0};
};

class WatchDispatcher {
 public:
  // `store` and `clock` are borrowed and must outlive the dispatcher. `encoder` writes
  // the frames (JSON, or protobuf for a protobuf cache).
  WatchDispatcher(const cache::ThreadSafeStore& store, const cache::Clock& clock, FrameEncoder encoder = {});
  ~WatchDispatcher();
  WatchDispatcher(const WatchDispatcher&) = delete;
  WatchDispatcher& operator=(const WatchDispatcher&) = delete;

  // Events the store just recorded, in history order.
  void onEvents(std::span<const cache::WatchEvent> events);
  // The store was replaced at `list_rv` by a relist that changed it: what changed happened
  // at RVs nobody here saw, so no stream can carry it exactly (W11), and the store's
  // history restarted at `list_rv`. As the apiserver ends its watchers when its cache is
  // re-initialised (W6), every watcher that started before the list (skip_through below
  // `list_rv`) is closed: its stream ends after what was queued, its client re-watches
  // from its last RV, gets 410 (W5) and relists. Watchers that started from the new state
  // go on. Returns how many were closed.
  size_t onRelist(uint64_t list_rv);
  // The store's RV moved to `rv` without an event (upstream bookmark, end of a relist).
  // Forwarded at once to watchers that asked for bookmarks.
  void onBookmark(uint64_t rv);

  // Keeps a watcher registered; unregisters on destruction.
  class Registration {
   public:
    Registration(WatchDispatcher& dispatcher, std::shared_ptr<CacheWatcher> watcher)
        : dispatcher_(dispatcher), watcher_(std::move(watcher)) {}
    ~Registration() { dispatcher_.remove(watcher_.get()); }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    CacheWatcher& watcher() { return *watcher_; }

   private:
    WatchDispatcher& dispatcher_;
    std::shared_ptr<CacheWatcher> watcher_;
  };
  using RegistrationPtr = std::unique_ptr<Registration>;

  struct SnapshotStart {
    RegistrationPtr registration;
    cache::SnapshotConstSharedPtr snapshot;  // the initial state; live events follow it
  };
  // Registers `watcher` and takes the current state in one step: the watcher receives
  // exactly the events after the snapshot (W4 RV unset/0, W9), and none at or below
  // `skip_through` (the revision a freshness proof showed the snapshot's state to be at:
  // what still arrives below it can only be objects created and deleted again).
  SnapshotStart registerWithSnapshot(std::shared_ptr<CacheWatcher> watcher, uint64_t skip_through = 0);

  struct ResumeStart {
    RegistrationPtr registration;
    // The caller replays the history events in (rv, replay_through]; events after
    // max(rv, replay_through) arrive live.
    uint64_t replay_through = 0;
  };
  // Registers `watcher` to continue after `rv` (W4 RV=N).
  ResumeStart registerAfter(std::shared_ptr<CacheWatcher> watcher, uint64_t rv);

  // Moves `watcher`'s start past `rv` (it will receive no event at or below it), provided
  // nothing was dispatched since `last_rv`; false otherwise. For a bookmark at a revision a
  // freshness proof showed the state at `last_rv` to be the upstream's at.
  bool skipThrough(CacheWatcher& watcher, uint64_t last_rv, uint64_t rv);

  // Every event at or below this RV has been queued to the watchers it concerns.
  uint64_t lastRV() const { return last_rv_.load(std::memory_order_acquire); }
  // When the upstream last told this resource anything (an event, a bookmark, a relist):
  // the cache was current then, up to the network's delay.
  cache::Clock::TimePoint lastUpdate() const {
    return cache::Clock::TimePoint(cache::Clock::Duration(last_update_.load(std::memory_order_relaxed)));
  }
  const cache::ThreadSafeStore& store() const { return store_; }
  const FrameEncoder& encoder() const { return encoder_; }
  // Protobuf bookmarks are shaped like one the upstream sent (BookmarkEncoder): the
  // reflector's side keeps the first it sees; null until then.
  void setBookmarkSample(std::string object);
  std::shared_ptr<const std::string> bookmarkSample() const;
  const WatchDispatcherStats& stats() const { return stats_; }
  size_t watcherCount() const;

 private:
  using Bucket = std::unordered_set<CacheWatcher*>;
  void addLocked(std::shared_ptr<CacheWatcher> watcher);
  void remove(CacheWatcher* watcher);
  void removeLocked(CacheWatcher* watcher);
  Bucket* bucketLocked(const IndexKey& key, bool create);

  const cache::ThreadSafeStore& store_;
  const cache::Clock& clock_;
  const FrameEncoder encoder_;
  WatchDispatcherStats stats_;
  mutable std::mutex sample_mu_;
  std::shared_ptr<const std::string> bookmark_sample_;  // guarded by sample_mu_
  std::atomic<uint64_t> last_rv_{0};
  std::atomic<cache::Clock::Duration::rep> last_update_{0};  // clock_.now().time_since_epoch() ticks

  mutable std::mutex mu_;
  std::unordered_map<CacheWatcher*, std::shared_ptr<CacheWatcher>> owners_;  // guarded by mu_
  Bucket all_;                                                             // guarded by mu_
  std::unordered_map<std::string, Bucket> by_namespace_;                   // guarded by mu_
  std::unordered_map<std::string, Bucket> by_node_;                        // guarded by mu_
  std::unordered_map<std::string, Bucket> by_name_;                        // guarded by mu_
};

}  // namespace watch
