#pragma once
// EventHistory: the sliding window of recent watch events for one resource (the
// apiserver's watchCache ring buffer). Watches resume from it, filtered watches use the
// previous object of each event (W10), and historical snapshots undo it (P1, P8).
//
// Bounded by count (capacity) AND by age (max_age): an append first evicts the oldest
// events beyond either bound. Events are appended in non-decreasing RV order (the store
// guarantees it; only a relist's synthetic DELETED events share the list RV).
//
// Not thread-safe: ThreadSafeStore owns it and calls it under its lock.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "cache/clock.h"
#include "cache/event_type.h"
#include "cache/object.h"
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
  // Records `event` (stamped with the clock) after evicting what is over the bounds.
  void append(WatchEvent&& event);
  // Drops events older than max_age; the store calls it periodically when idle.
  size_t evictExpired();

  // The position of the first event with RV > rv, or Expired when events after `rv` may
  // have been evicted: "too old resource version: rv (oldest-1)" (W5).
  Result<HistoryCursor> cursorAfter(uint64_t rv) const;
  // Copies up to `max_events` events from `cursor` into `out` and advances it; Expired
  // when the cursor's events were evicted meanwhile.
  Result<void> read(HistoryCursor& cursor, size_t max_events, std::vector<WatchEvent>& out) const;
  // The events with RV > rv, for undoing them (historical snapshots). Expired as above.
  Result<std::vector<WatchEvent>> eventsAfter(uint64_t rv) const;

  // The smallest RV a watch can resume from (the number W5 prints).
  uint64_t oldestResumableRV() const;
  size_t size() const { return events_.size(); }
  uint64_t evictedTotal() const { return first_index_; }
  uint64_t endIndex() const { return first_index_ + events_.size(); }
  // JSON bytes of objects only the history keeps alive (previous and deleted versions).
  uint64_t retainedJsonBytes() const { return retained_json_bytes_; }

 private:
  bool overBoundsLocked(Clock::TimePoint now) const;
  void evictFrontLocked();

  EventHistoryOptions options_;
  Clock& clock_;
  // Contents are the events with absolute indexes [first_index_, first_index_ + size);
  // first_index_ never decreases.
  std::deque<WatchEvent> events_;
  uint64_t first_index_ = 0;
  uint64_t start_rv_ = 0;  // list RV given to start(); events after it are all here until an eviction
  bool started_ = false;
  uint64_t last_evicted_rv_ = 0;
  uint64_t retained_json_bytes_ = 0;
};

}  // namespace cache
