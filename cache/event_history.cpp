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

void EventHistory::restart(uint64_t list_rv) {
  while (!events_.empty()) evictFrontLocked();
  started_ = true;
  start_rv_ = list_rv;
  window_start_index_ = first_index_;
}

bool EventHistory::overBoundsLocked(Clock::TimePoint now) const {
  if (events_.empty()) return false;
  return events_.size() >= options_.capacity || now - events_.front().recorded_at > options_.max_age;
}

namespace {

// What the history alone keeps alive: the previous version and a deletion's last state
// (the event's object is otherwise the store's current one, or a later event's prev).
// Each counts where it is held: plain JSON bytes, or packed heap bytes.
struct Retained {
  uint64_t json = 0;
  uint64_t packed = 0;
  uint64_t versions = 0;
};

void addHeld(const HistoryObject& o, Retained& r) {
  if (o.plain) r.json += o.plain->byteSize();
  if (o.packed) r.packed += o.packed->heapBytes(), ++r.versions;
}

Retained retained(const HistoryEvent& event) {
  Retained r;
  addHeld(event.prev_object, r);
  if (event.type == EventType::Deleted) addHeld(event.object, r);
  return r;
}

}  // namespace

WatchEvent HistoryEvent::unpack() const {
  return WatchEvent{type, object.get(), prev_object.get(), resource_version, recorded_at};
}

void PackBatch::pack() {
  for (PackJob& job : jobs) {
    if (!dictionary) {
      // Whole versions until kSampleBytes, as PackDictionary::fromSamples takes them; a
      // superseded current object of a compressed store is itself packed, hence copies.
      std::string samples;
      for (const PackJob& sample : jobs) {
        if (samples.size() >= PackDictionary::kSampleBytes) break;
        sample.object->appendBytes(samples);
      }
      dictionary = std::make_shared<const PackDictionary>(samples);
    }
    job.packed = PackedObject::pack(*job.object, dictionary);
    // Small objects (a short ConfigMap, a Lease) can cost more packed than plain: keep those.
    if (job.packed->heapBytes() >= job.object->byteSize() + job.object->overheadBytes()) job.packed = nullptr;
  }
}

void EventHistory::evictFrontLocked() {
  const HistoryEvent& front = events_.front();
  const Retained r = retained(front);
  retained_json_bytes_ -= r.json;
  packed_bytes_ -= r.packed;
  packed_versions_ -= r.versions;
  if (front.type != EventType::Deleted && front.object.plain) {
    auto it = current_entries_.find(front.object.plain.get());
    if (it != current_entries_.end() && it->second == first_index_) current_entries_.erase(it);
  }
  last_evicted_rv_ = front.resource_version;
  events_.pop_front();
  ++first_index_;
}

void EventHistory::append(WatchEvent&& event) {
  const auto now = clock_.now();
  while (overBoundsLocked(now)) evictFrontLocked();
  HistoryEvent stored{event.type, {std::move(event.object), nullptr}, {std::move(event.prev_object), nullptr},
                      event.resource_version, now, HistoryEvent::kNoEntry};
  if (stored.prev_object.plain) {
    auto it = current_entries_.find(stored.prev_object.plain.get());
    if (it != current_entries_.end()) {
      stored.prev_entry = it->second;
      current_entries_.erase(it);
    }
  }
  if (stored.type != EventType::Deleted && stored.object.plain) {
    current_entries_[stored.object.plain.get()] = endIndex();
  }
  retained_json_bytes_ += retained(stored).json;
  events_.push_back(std::move(stored));
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
  // Mirrors the apiserver: before any eviction since the (re)start the window starts at
  // the list RV; after one, at the oldest buffered event minus one (it is conservative
  // when RVs have gaps).
  if (first_index_ == window_start_index_) {
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
                             [](uint64_t value, const HistoryEvent& e) { return value < e.resource_version; });
  return HistoryCursor{first_index_ + static_cast<uint64_t>(it - events_.begin())};
}

Result<void> EventHistory::read(HistoryCursor& cursor, size_t max_events, std::vector<HistoryEvent>& out) const {
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

PackBatch EventHistory::packBatch(size_t max_jobs) const {
  PackBatch batch;
  batch.dictionary = dictionary_;
  uint64_t index = std::max(packed_upto_, first_index_);
  for (; index < endIndex() && batch.jobs.size() < max_jobs; ++index) {
    const HistoryEvent& event = events_[index - first_index_];
    if (event.prev_object.plain) batch.jobs.push_back({index, true, event.prev_entry, event.prev_object.plain, nullptr});
    if (event.type == EventType::Deleted && event.object.plain) {
      batch.jobs.push_back({index, false, HistoryEvent::kNoEntry, event.object.plain, nullptr});
    }
  }
  batch.scanned_to = index;
  return batch;
}

void EventHistory::applyPacked(const PackBatch& batch) {
  if (!dictionary_) dictionary_ = batch.dictionary;
  // Swaps `field` when it still holds the very object that was packed.
  auto swap = [&](HistoryObject& field, const PackJob& job) {
    if (field.plain != job.object || !job.packed) return false;
    field = HistoryObject{nullptr, job.packed};
    return true;
  };
  for (const PackJob& job : batch.jobs) {
    if (job.entry < first_index_ || job.entry >= endIndex()) continue;  // evicted meanwhile
    HistoryEvent& event = events_[job.entry - first_index_];
    if (swap(job.prev ? event.prev_object : event.object, job)) {
      retained_json_bytes_ -= job.object->byteSize();
      packed_bytes_ += job.packed->heapBytes();
      ++packed_versions_;
    }
    if (job.also_entry >= first_index_ && job.also_entry < endIndex()) {
      swap(events_[job.also_entry - first_index_].object, job);
    }
  }
  packed_upto_ = std::max(packed_upto_, batch.scanned_to);
}

Result<std::vector<HistoryEvent>> EventHistory::eventsAfter(uint64_t rv) const {
  auto cursor = cursorAfter(rv);
  if (!cursor) return Unexpected{cursor.error()};
  std::vector<HistoryEvent> out;
  out.reserve(endIndex() - cursor->next_index);
  auto result = read(*cursor, SIZE_MAX, out);
  if (!result) return Unexpected{result.error()};
  return out;
}

}  // namespace cache
