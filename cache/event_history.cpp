#include "cache/event_history.h"

#include <algorithm>
#include <string>

namespace cache {

EventHistory::EventHistory(EventHistoryOptions options, Clock& clock) : options_(options), clock_(clock) {
  if (options_.capacity == 0) options_ = EventHistoryOptions{.capacity = 1, .max_age = options.max_age};
}

void EventHistory::start(uint64_t list_rv) {
  if (started_) return;
  started_ = true;
  start_rv_ = list_rv;
}

bool EventHistory::overBoundsLocked(Clock::TimePoint now) const {
  if (events_.empty()) return false;
  return events_.size() >= options_.capacity || now - events_.front().recorded_at > options_.max_age;
}

namespace {

uint64_t retainedBytes(const WatchEvent& event) {
  uint64_t bytes = event.prev_object ? event.prev_object->bytes().size() : 0;
  if (event.type == EventType::Deleted && event.object) bytes += event.object->bytes().size();
  return bytes;
}

}  // namespace

void EventHistory::evictFrontLocked() {
  retained_json_bytes_ -= retainedBytes(events_.front());
  last_evicted_rv_ = events_.front().resource_version;
  events_.pop_front();
  ++first_index_;
}

void EventHistory::append(WatchEvent&& event) {
  const auto now = clock_.now();
  while (overBoundsLocked(now)) evictFrontLocked();
  event.recorded_at = now;
  retained_json_bytes_ += retainedBytes(event);
  events_.push_back(std::move(event));
}

size_t EventHistory::evictExpired() {
  const auto now = clock_.now();
  size_t evicted = 0;
  while (!events_.empty() && now - events_.front().recorded_at > options_.max_age) {
    evictFrontLocked();
    ++evicted;
  }
  return evicted;
}

uint64_t EventHistory::oldestResumableRV() const {
  // Mirrors the apiserver: before any eviction the window starts at the list RV; after
  // one, at the oldest buffered event minus one (it is conservative when RVs have gaps).
  if (first_index_ == 0) {
    if (started_) return start_rv_;
    return events_.empty() ? 0 : events_.front().resource_version - 1;
  }
  if (!events_.empty()) return events_.front().resource_version - 1;
  return last_evicted_rv_;
}

Result<HistoryCursor> EventHistory::cursorAfter(uint64_t rv) const {
  const uint64_t oldest = oldestResumableRV();
  if (rv < oldest) {
    return fail(Reason::Expired, "too old resource version: " + std::to_string(rv) + " (" + std::to_string(oldest) + ")");
  }
  auto it = std::upper_bound(events_.begin(), events_.end(), rv,
                             [](uint64_t value, const WatchEvent& e) { return value < e.resource_version; });
  return HistoryCursor{first_index_ + static_cast<uint64_t>(it - events_.begin())};
}

Result<void> EventHistory::read(HistoryCursor& cursor, size_t max_events, std::vector<WatchEvent>& out) const {
  if (cursor.next_index < first_index_) {
    return fail(Reason::Expired, "too old resource version: events after the watch position were evicted");
  }
  const uint64_t end = endIndex();
  const uint64_t available = end > cursor.next_index ? end - cursor.next_index : 0;
  const uint64_t stop = cursor.next_index + std::min<uint64_t>(available, max_events);
  for (uint64_t i = cursor.next_index; i < stop; ++i) out.push_back(events_[i - first_index_]);
  cursor.next_index = std::max(cursor.next_index, stop);
  return {};
}

Result<std::vector<WatchEvent>> EventHistory::eventsAfter(uint64_t rv) const {
  auto cursor = cursorAfter(rv);
  if (!cursor) return Unexpected{cursor.error()};
  std::vector<WatchEvent> out;
  out.reserve(endIndex() - cursor->next_index);
  auto result = read(*cursor, SIZE_MAX, out);
  if (!result) return Unexpected{result.error()};
  return out;
}

}  // namespace cache
