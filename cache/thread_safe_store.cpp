#include "cache/thread_safe_store.h"

#include "cache/packing/packed_object.h"

#include <algorithm>
#include <string>
#include <unordered_set>

namespace cache {

namespace {

bool keyLess(const ObjectConstSharedPtr& a, const ObjectConstSharedPtr& b) { return a->key() < b->key(); }

// Sorts a list by key (upstream lists already are, P9) and keeps the last of duplicates.
void sortUnique(std::vector<ObjectConstSharedPtr>& items) {
  if (!std::is_sorted(items.begin(), items.end(), keyLess)) std::stable_sort(items.begin(), items.end(), keyLess);
  auto last = std::unique(items.rbegin(), items.rend(), [](const auto& a, const auto& b) { return a->key() == b->key(); });
  items.erase(items.begin(), last.base());
}

// The current objects' dictionary, from the first objects the packer meets
// (PackDictionary::fromSamples; why these: docs/design.md, "Packed objects' dictionary").
PackDictionaryConstSharedPtr dictionaryFrom(const std::vector<ObjectConstSharedPtr>& objects) {
  std::vector<std::string_view> samples;
  size_t bytes = 0;
  for (const ObjectConstSharedPtr& o : objects) {
    if (bytes >= PackDictionary::kSampleBytes) break;
    samples.push_back(o->plainBytes());
    bytes += o->byteSize();
  }
  return PackDictionary::fromSamples(samples);
}

}  // namespace

ThreadSafeStore::ThreadSafeStore(StoreOptions options, Clock& clock)
    : options_(std::move(options)), indexer_(options_.indexes), history_(options_.history, clock) {}

Unexpected ThreadSafeStore::regression(std::string_view what, uint64_t rv) const {
  return fail(Reason::Internal, std::string(what) + " resourceVersion " + std::to_string(rv) +
                                    " does not advance past the store's " + std::to_string(currentRV()));
}

void ThreadSafeStore::setResourceVersionLocked(uint64_t rv) {
  current_rv_.store(rv, std::memory_order_release);
}

void ThreadSafeStore::refreshGaugesLocked() {
  // A map slot is one shared_ptr; a chunk adds its control block and vector header.
  const uint64_t map_bytes = objects_.size() * sizeof(ObjectConstSharedPtr) + objects_.chunkCount() * 64;
  stats_.objects.store(objects_.size(), std::memory_order_relaxed);
  stats_.json_bytes.store(json_bytes_, std::memory_order_relaxed);
  stats_.overhead_bytes.store(overhead_bytes_ + map_bytes + indexer_.overheadBytes(), std::memory_order_relaxed);
  stats_.history_events.store(history_.size(), std::memory_order_relaxed);
  stats_.history_json_bytes.store(history_.retainedJsonBytes(), std::memory_order_relaxed);
  stats_.history_packed_bytes.store(history_.packedBytes(), std::memory_order_relaxed);
  stats_.history_packed_versions.store(history_.packedVersions(), std::memory_order_relaxed);
  stats_.history_evictions_total.store(history_.evictedTotal(), std::memory_order_relaxed);
  stats_.packed_objects.store(packed_objects_, std::memory_order_relaxed);
  stats_.packed_bytes.store(packed_bytes_, std::memory_order_relaxed);
}

Result<WatchEvent> ThreadSafeStore::apply(EventType type, ObjectConstSharedPtr object) {
  if (type != EventType::Added && type != EventType::Modified && type != EventType::Deleted) {
    return fail(Reason::BadRequest, "only ADDED, MODIFIED and DELETED events change the store");
  }
  if (!object) return fail(Reason::BadRequest, "event without object");
  const NotifyAfterUnlock notify{changes_};  // declared before the lock: runs after its release
  std::unique_lock lock(mu_);
  const uint64_t rv = object->resourceVersion();
  if (rv <= currentRV()) return regression(std::string(wireName(type)) + " event", rv);
  ++write_seq_;
  ObjectConstSharedPtr previous;
  if (type == EventType::Deleted) {
    previous = objects_.erase(object->key(), write_seq_, shared_seq_);
    indexer_.update(previous.get(), nullptr);
  } else {
    previous = objects_.upsert(object, write_seq_, shared_seq_);
    indexer_.update(previous.get(), object.get());
    json_bytes_ += object->byteSize();
    overhead_bytes_ += object->overheadBytes();
  }
  if (previous) {
    json_bytes_ -= previous->byteSize();
    overhead_bytes_ -= previous->overheadBytes();
    packed_bytes_ -= previous->packedBytes();
    packed_objects_ -= previous->isPacked() ? 1 : 0;
  }
  WatchEvent event{type, std::move(object), std::move(previous), rv, {}};
  history_.append(WatchEvent(event));
  setResourceVersionLocked(rv);
  refreshGaugesLocked();
  return event;
}

Result<ReplaceResult> ThreadSafeStore::replace(std::vector<ObjectConstSharedPtr> items, uint64_t list_rv) {
  sortUnique(items);
  const NotifyAfterUnlock notify{changes_};  // declared before the lock: runs after its release
  std::unique_lock lock(mu_);
  const uint64_t old_rv = currentRV();
  if (list_rv < old_rv) return regression("list", list_rv);
  ++write_seq_;
  const bool first_list = !synced_.load(std::memory_order_relaxed);
  std::vector<ObjectConstSharedPtr> old_items;
  old_items.reserve(objects_.size());
  objects_.forEach([&](const ObjectConstSharedPtr& o) { old_items.push_back(o); });

  // Both sides are in key order: one merge updates the indexes and counts the differences.
  ReplaceResult result;
  size_t i = 0, j = 0;
  while (i < old_items.size() || j < items.size()) {
    const ObjectConstSharedPtr* before = i < old_items.size() ? &old_items[i] : nullptr;
    const ObjectConstSharedPtr* after = j < items.size() ? &items[j] : nullptr;
    if (before && after && (*before)->key() == (*after)->key()) {
      if (before->get() != after->get()) indexer_.update(before->get(), after->get());
      result.modified += (*before)->resourceVersion() != (*after)->resourceVersion();
      ++i, ++j;
    } else if (before && (!after || (*before)->key() < (*after)->key())) {
      indexer_.update(before->get(), nullptr);
      ++result.deleted;
      ++i;
    } else {
      indexer_.update(nullptr, after->get());
      ++result.added;
      ++j;
    }
  }
  objects_.assign(items, write_seq_);
  json_bytes_ = 0;
  overhead_bytes_ = 0;
  packed_bytes_ = 0;
  packed_objects_ = 0;
  for (const auto& o : items) {
    json_bytes_ += o->byteSize();
    overhead_bytes_ += o->overheadBytes();
    packed_bytes_ += o->packedBytes();
    packed_objects_ += o->isPacked() ? 1 : 0;
  }
  if (first_list) {
    history_.start(list_rv);
    result = {};  // nobody can watch before the first list: its items are the starting state
  } else if (result.changed()) {
    // Snapshots already built at older RVs stay: they were the upstream's states then.
    history_.restart(list_rv);
  }
  setResourceVersionLocked(list_rv);
  synced_.store(true, std::memory_order_release);
  refreshGaugesLocked();
  return result;
}

Result<void> ThreadSafeStore::bookmark(uint64_t rv) {
  const NotifyAfterUnlock notify{changes_};  // declared before the lock: runs after its release
  std::unique_lock lock(mu_);
  if (rv < currentRV()) return regression("bookmark", rv);
  if (rv > currentRV()) setResourceVersionLocked(rv);
  return {};
}

size_t ThreadSafeStore::evictExpiredHistory() {
  std::unique_lock lock(mu_);
  const size_t evicted = history_.evictExpired();
  refreshGaugesLocked();
  return evicted;
}

size_t ThreadSafeStore::packHistory(size_t max_versions) {
  std::lock_guard pack_lock(pack_mu_);
  PackBatch batch;
  {
    std::shared_lock lock(mu_);
    batch = history_.packBatch(max_versions);
  }
  batch.pack();
  std::unique_lock lock(mu_);
  history_.applyPacked(batch);
  refreshGaugesLocked();
  return batch.jobs.size();
}

size_t ThreadSafeStore::packCurrent(size_t max_objects) {
  std::lock_guard pack_lock(pack_mu_);
  std::vector<ObjectConstSharedPtr> found;
  {
    std::shared_lock lock(mu_);
    // From the cursor to the end, then from the start: every object is met in turn.
    auto wanted = [&](const ObjectConstSharedPtr& o) {
      return !o->isPacked() && !history_.mayHoldCurrent(o.get()) && !not_worth_packing_.contains(o.get());
    };
    bool wrapped = false;
    objects_.forEach([&](const ObjectConstSharedPtr& o) {
      if (found.size() < max_objects && o->key() > pack_cursor_ && wanted(o)) found.push_back(o);
    });
    if (found.size() < max_objects) {
      wrapped = true;
      objects_.forEach([&](const ObjectConstSharedPtr& o) {
        if (found.size() < max_objects && o->key() <= pack_cursor_ && wanted(o)) found.push_back(o);
      });
    }
    pack_cursor_ = found.empty() || wrapped ? std::string() : found.back()->key();
    // Pointers of objects gone since: forget them all now and then.
    if (not_worth_packing_.size() > 2 * objects_.size() + 1024) not_worth_packing_.clear();
  }
  if (!current_dictionary_ && !found.empty()) current_dictionary_ = dictionaryFrom(found);
  std::vector<std::pair<ObjectConstSharedPtr, ObjectConstSharedPtr>> swaps;  // old, new
  for (const ObjectConstSharedPtr& o : found) {
    ObjectConstSharedPtr packed = Object::packed(*o, current_dictionary_);
    if (packed->packedBytes() >= o->byteSize()) {
      not_worth_packing_.insert(o.get());
      continue;
    }
    swaps.emplace_back(o, std::move(packed));
  }
  if (swaps.empty()) return found.size();
  std::unique_lock lock(mu_);
  ++write_seq_;
  for (auto& [old_object, new_object] : swaps) {
    // Changed meanwhile (a newer version, or an event now holds it): leave it.
    if (objects_.get(old_object->key()) != old_object || history_.mayHoldCurrent(old_object.get())) continue;
    objects_.upsert(new_object, write_seq_, shared_seq_);
    indexer_.update(old_object.get(), new_object.get());
    overhead_bytes_ += new_object->overheadBytes() - old_object->overheadBytes();
    packed_bytes_ += new_object->packedBytes();
    ++packed_objects_;
  }
  {
    // Cached snapshots would keep the plain instances alive.
    std::lock_guard snapshot_lock(snapshot_mu_);
    latest_snapshot_.reset();
    historical_snapshots_.clear();
  }
  refreshGaugesLocked();
  return found.size();
}

ObjectConstSharedPtr ThreadSafeStore::get(std::string_view key) const {
  std::shared_lock lock(mu_);
  return objects_.get(key);
}

std::vector<ObjectConstSharedPtr> ThreadSafeStore::byIndex(std::string_view name, std::string_view value) const {
  std::shared_lock lock(mu_);
  return indexer_.byIndex(name, value);
}

std::optional<ThreadSafeStore::NamedObjects> ThreadSafeStore::byName(std::string_view name) const {
  std::shared_lock lock(mu_);
  if (!indexer_.hasIndex(indexes::kNamespace)) return std::nullopt;
  NamedObjects out;
  // Writers change the RV under mu_ exclusively: this is the state's RV.
  out.resource_version = currentRV();
  if (auto object = objects_.get(name)) out.items.push_back(std::move(object));  // cluster-scoped
  for (const std::string& ns : indexer_.values(indexes::kNamespace)) {
    if (auto object = objects_.get(makeKey(ns, name))) out.items.push_back(std::move(object));
  }
  // Namespaces come in string order, keys sort by "ns/name" ("a-b/x" before "a/x", P9).
  std::sort(out.items.begin(), out.items.end(), keyLess);
  return out;
}

bool ThreadSafeStore::hasIndex(std::string_view name) const {
  std::shared_lock lock(mu_);
  return indexer_.hasIndex(name);
}

SnapshotConstSharedPtr ThreadSafeStore::snapshotLocked() const {
  std::lock_guard snapshot_lock(snapshot_mu_);
  const uint64_t rv = currentRV();
  if (latest_snapshot_ && latest_snapshot_seq_ == write_seq_ && latest_snapshot_->resourceVersion() == rv) {
    return latest_snapshot_;
  }
  latest_snapshot_ = std::make_shared<Snapshot>(rv, objects_.chunks());
  latest_snapshot_seq_ = write_seq_;
  shared_seq_ = write_seq_;
  stats_.snapshots_built_total.fetch_add(1, std::memory_order_relaxed);
  return latest_snapshot_;
}

SnapshotConstSharedPtr ThreadSafeStore::snapshot() const {
  std::shared_lock lock(mu_);
  return snapshotLocked();
}

Result<SnapshotConstSharedPtr> ThreadSafeStore::snapshotAt(uint64_t rv) const {
  std::shared_lock lock(mu_);
  const uint64_t current = currentRV();
  if (rv > current) {
    return Unexpected{tooLargeResourceVersionStatus(rv, current)};
  }
  if (rv == current) return snapshotLocked();
  {
    std::lock_guard snapshot_lock(snapshot_mu_);
    for (auto it = historical_snapshots_.begin(); it != historical_snapshots_.end(); ++it) {
      if ((*it)->resourceVersion() != rv) continue;
      historical_snapshots_.splice(historical_snapshots_.begin(), historical_snapshots_, it);
      return historical_snapshots_.front();
    }
  }
  auto events = history_.eventsAfter(rv);
  if (!events) return fail(Reason::Expired, "too old resource version: " + std::to_string(rv));
  SnapshotConstSharedPtr base = snapshotLocked();
  lock.unlock();

  // Undo the events after rv: each key goes back to its state before its first event.
  // Only the first event of each key matters: only its previous version is unpacked.
  std::vector<std::pair<std::string, ObjectConstSharedPtr>> changes;
  std::unordered_set<std::string_view> seen;
  for (const HistoryEvent& event : *events) {
    const std::string& key = event.object.key();
    if (!seen.insert(key).second) continue;
    changes.emplace_back(key, event.prev_object.get());
  }
  std::sort(changes.begin(), changes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  SnapshotConstSharedPtr snapshot = Snapshot::withChanges(*base, rv, changes);
  stats_.historical_snapshots_built_total.fetch_add(1, std::memory_order_relaxed);

  std::lock_guard snapshot_lock(snapshot_mu_);
  historical_snapshots_.push_front(snapshot);
  if (historical_snapshots_.size() > options_.historical_snapshot_cache) historical_snapshots_.pop_back();
  return snapshot;
}

Result<HistoryCursor> ThreadSafeStore::watchCursor(uint64_t rv) const {
  std::shared_lock lock(mu_);
  return history_.cursorAfter(rv);
}

Result<void> ThreadSafeStore::readEvents(HistoryCursor& cursor, size_t max_events, std::vector<WatchEvent>& out) const {
  std::vector<HistoryEvent> stored;
  {
    std::shared_lock lock(mu_);
    auto result = history_.read(cursor, max_events, stored);
    if (!result) return result;
  }
  // Packed versions inflate outside the lock, so a long resume never holds up the writer.
  out.reserve(out.size() + stored.size());
  for (const HistoryEvent& event : stored) out.push_back(event.unpack());
  return {};
}

uint64_t ThreadSafeStore::oldestResumableRV() const {
  std::shared_lock lock(mu_);
  return history_.oldestResumableRV();
}

}  // namespace cache
