#pragma once
// EventHistory: the sliding window of recent watch events for one resource (the
// apiserver's watchCache ring buffer). Watches resume from it, filtered watches use the
// previous object of each event (W10), and historical snapshots undo it (P1, P8).
//
// Bounded by count (capacity) AND by age (max_age): an append first evicts the oldest
// events beyond either bound. Events are appended in increasing RV order (the store
// guarantees it). A relist that changed the state restarts the window at its list RV
// (restart()), as the apiserver's watch cache does on Replace.
//
// Old versions can be packed (issue #20): once a newer version supersedes an object,
// packBatch()/applyPacked() swap the history's references to it for a PackedObject, in
// two steps so that the deflating runs outside the store's lock. Readers get the
// HistoryEvents as stored and unpack them (HistoryEvent::unpack) after unlocking.
//
// Not thread-safe: ThreadSafeStore owns it and calls it under its lock.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "cache/clock.h"
#include "cache/event_type.h"
#include "cache/object.h"
#include "cache/packing/packed_object.h"
#include "cache/result.h"

namespace cache {

// One change of one object.
struct WatchEvent {
  EventType type = EventType::Added;
  // ADDED/MODIFIED: the new state. DELETED: the last state, carrying the deletion RV (W3).
  ObjectConstSharedPtr object;
  // The state before this event (null for ADDED), so filtered watches can turn a change
  // that leaves the selector into DELETED and one that enters it into ADDED (W10).
  ObjectConstSharedPtr prev_object;
  uint64_t resource_version = 0;
  Clock::TimePoint recorded_at{};
};

// An object as the history holds it: plain while it may still be the current version
// (then shared with the store, so packing it would save nothing), packed once superseded.
struct HistoryObject {
  ObjectConstSharedPtr plain;
  PackedObjectConstSharedPtr packed;

  explicit operator bool() const { return plain || packed; }
  const std::string& key() const { return plain ? plain->key() : packed->key(); }
  // The object; when packed, unpacked (PackedObject::unpack shares one while it is held).
  ObjectConstSharedPtr get() const { return plain ? plain : packed ? packed->unpack() : nullptr; }
};

// A WatchEvent as the history stores it.
struct HistoryEvent {
  static constexpr uint64_t kNoEntry = UINT64_MAX;

  EventType type = EventType::Added;
  HistoryObject object;
  HistoryObject prev_object;
  uint64_t resource_version = 0;
  Clock::TimePoint recorded_at{};
  // The absolute index of the earlier event whose `object` is this event's prev_object
  // (kNoEntry when there is none in the window): packing one packs both references.
  uint64_t prev_entry = kNoEntry;

  WatchEvent unpack() const;
};

// Old versions to pack, found under the store's shared lock, packed without it, and
// swapped in under its exclusive lock.
struct PackJob {
  uint64_t entry = 0;                          // absolute index of the event
  bool prev = false;                           // its prev_object, else its (deleted) object
  uint64_t also_entry = HistoryEvent::kNoEntry;  // an earlier event whose object it is too
  ObjectConstSharedPtr object;
  PackedObjectConstSharedPtr packed;           // filled by the packer
};
struct PackBatch {
  std::vector<PackJob> jobs;
  uint64_t scanned_to = 0;                   // events before this index were examined
  PackDictionaryConstSharedPtr dictionary;   // the history's, or a new one from the first job
  void pack();
};

struct EventHistoryOptions {
  // The apiserver sizes its window between 100 and 102400 events; we keep the upper
  // bound and let age do the shrinking.
  size_t capacity = 102400;
  // At least the apiserver's window (75 s) doubled, so a client that reconnects after a
  // full watch timeout backoff still resumes without a relist.
  std::chrono::seconds max_age{150};
};

// A position in the history: the absolute index of the next event to read. Absolute
// indexes never move backwards, so a cursor into evicted events fails instead of reading
// someone else's events.
struct HistoryCursor {
  uint64_t next_index = 0;
};

class EventHistory {
 public:
  EventHistory(EventHistoryOptions options, Clock& clock);

  // Called once with the RV of the first list: events after it are complete.
  void start(uint64_t list_rv);
  // A relist at `list_rv` found a state that differs from the one these events lead to:
  // what changed in between happened at RVs nobody here saw, so no watch can resume across
  // it. Every event goes (cursors into them fail, as after an eviction) and the window
  // starts again at `list_rv`: a resume from an older RV is "too old" (W5), one from
  // `list_rv` on is served. The apiserver's watchCache.Replace (history.ResetLocked).
  void restart(uint64_t list_rv);
  // Records `event` (stamped with the clock) after evicting what is over the bounds.
  void append(WatchEvent&& event);
  // Drops events older than max_age; the store calls it periodically when idle.
  size_t evictExpired();

  // The position of the first event with RV > rv, or Expired when events after `rv` may
  // have been evicted: "too old resource version: rv (oldest-1)" (W5).
  Result<HistoryCursor> cursorAfter(uint64_t rv) const;
  // Copies up to `max_events` events from `cursor` into `out` and advances it; Expired
  // when the cursor's events were evicted meanwhile.
  // The events are as stored: the caller unpacks them (HistoryEvent::unpack) after unlocking.
  Result<void> read(HistoryCursor& cursor, size_t max_events, std::vector<HistoryEvent>& out) const;
  // The events with RV > rv, for undoing them (historical snapshots). Expired as above.
  Result<std::vector<HistoryEvent>> eventsAfter(uint64_t rv) const;

  // Up to `max_jobs` superseded versions not packed yet, oldest first.
  PackBatch packBatch(size_t max_jobs) const;
  // Swaps in the packed versions of `batch` whose events are still here and unchanged.
  void applyPacked(const PackBatch& batch);

  // The smallest RV a watch can resume from (the number W5 prints).
  uint64_t oldestResumableRV() const;
  size_t size() const { return events_.size(); }
  uint64_t evictedTotal() const { return first_index_; }
  uint64_t endIndex() const { return first_index_ + events_.size(); }
  // JSON bytes of objects only the history keeps alive (previous and deleted versions).
  // Plain ones count their JSON bytes here, packed ones their heap bytes in packedBytes().
  uint64_t retainedJsonBytes() const { return retained_json_bytes_; }
  uint64_t packedBytes() const { return packed_bytes_; }
  uint64_t packedVersions() const { return packed_versions_; }
  // Whether an event here has `object` as its object while it may still be current: the
  // store does not pack such an object, since this reference would keep it plain.
  bool mayHoldCurrent(const Object* object) const { return current_entries_.contains(object); }

 private:
  bool overBoundsLocked(Clock::TimePoint now) const;
  void evictFrontLocked();

  EventHistoryOptions options_;
  Clock& clock_;
  // Contents are the events with absolute indexes [first_index_, first_index_ + size);
  // first_index_ never decreases.
  std::deque<HistoryEvent> events_;
  uint64_t first_index_ = 0;
  uint64_t start_rv_ = 0;  // list RV of start() or restart(); events after it are all here until an eviction
  bool started_ = false;
  uint64_t window_start_index_ = 0;  // first_index_ at the last start()/restart(): no eviction since while equal
  uint64_t last_evicted_rv_ = 0;
  uint64_t retained_json_bytes_ = 0;
  uint64_t packed_bytes_ = 0;
  uint64_t packed_versions_ = 0;
  // Objects that are some event's `object` and may still be current, to the absolute
  // index of that event: finds HistoryEvent::prev_entry in O(1).
  std::unordered_map<const Object*, uint64_t> current_entries_;
  uint64_t packed_upto_ = 0;  // events before this absolute index were offered to the packer
  PackDictionaryConstSharedPtr dictionary_;
};

}  // namespace cache
