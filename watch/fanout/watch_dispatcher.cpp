#include "watch/fanout/watch_dispatcher.h"

#include <algorithm>
#include <array>
#include <vector>

namespace watch {
namespace {

std::string_view nodeOf(const cache::ObjectConstSharedPtr& object) {
  if (!object) return {};
  return cache::lookup(object->meta().fields, "spec.nodeName").value_or("");
}

// The frames one event may be sent as, built on first use and shared by all watchers.
class EventFrames {
 public:
  EventFrames(const cache::WatchEvent& event, const FrameEncoder& encoder) : event_(event), encoder_(encoder) {}

  const FrameConstSharedPtr& get(const Delivery& d, bool metadata_only, uint64_t& encoded) {
    size_t slot = metadata_only ? 4 : 0;
    if (d.source == DeliverySource::PreviousAtEvent) {
      slot += 3;
    } else if (d.type == cache::EventType::Modified) {
      slot += 1;
    } else if (d.type == cache::EventType::Deleted) {
      slot += 2;
    }
    FrameConstSharedPtr& frame = frames_[slot];
    if (!frame) {
      ++encoded;
      if (d.source == DeliverySource::PreviousAtEvent) {
        // Leaving the selection: the previous content at this change's RV (W10).
        frame = encoder_.sharedEvent(d.type, *event_.prev_object->withResourceVersion(event_.resource_version),
                                     metadata_only);
      } else {
        frame = encoder_.sharedEvent(d.type, *event_.object, metadata_only);
      }
    }
    return frame;
  }

 private:
  const cache::WatchEvent& event_;
  const FrameEncoder& encoder_;
  // ADDED, MODIFIED, DELETED, DELETED-of-previous; then the same as PartialObjectMetadata.
  std::array<FrameConstSharedPtr, 8> frames_;
};

}  // namespace

WatchDispatcher::WatchDispatcher(const cache::ThreadSafeStore& store, const cache::Clock& clock, FrameEncoder encoder)
    : store_(store), clock_(clock), encoder_(std::move(encoder)) {
  last_rv_.store(store.currentRV(), std::memory_order_release);
}

void WatchDispatcher::setBookmarkSample(std::string object) {
  std::lock_guard lock(sample_mu_);
  bookmark_sample_ = std::make_shared<const std::string>(std::move(object));
}

std::shared_ptr<const std::string> WatchDispatcher::bookmarkSample() const {
  std::lock_guard lock(sample_mu_);
  return bookmark_sample_;
}

WatchDispatcher::~WatchDispatcher() = default;

size_t WatchDispatcher::watcherCount() const {
  std::lock_guard lock(mu_);
  return owners_.size();
}

WatchDispatcher::Bucket* WatchDispatcher::bucketLocked(const IndexKey& key, bool create) {
  std::unordered_map<std::string, Bucket>* index = nullptr;
  switch (key.kind) {
    case IndexKey::Kind::All: return &all_;
    case IndexKey::Kind::Namespace: index = &by_namespace_; break;
    case IndexKey::Kind::NodeName: index = &by_node_; break;
    case IndexKey::Kind::Name: index = &by_name_; break;
  }
  if (create) return &(*index)[key.value];
  auto it = index->find(key.value);
  return it == index->end() ? nullptr : &it->second;
}

void WatchDispatcher::addLocked(std::shared_ptr<CacheWatcher> watcher) {
  bucketLocked(watcher->filter().indexKey(), true)->insert(watcher.get());
  owners_.emplace(watcher.get(), std::move(watcher));
}

void WatchDispatcher::removeLocked(CacheWatcher* watcher) {
  auto owner = owners_.find(watcher);
  if (owner == owners_.end()) return;
  const IndexKey key = watcher->filter().indexKey();
  if (Bucket* bucket = bucketLocked(key, false)) {
    bucket->erase(watcher);
    if (bucket->empty() && key.kind != IndexKey::Kind::All) {
      auto& index = key.kind == IndexKey::Kind::Namespace ? by_namespace_
                    : key.kind == IndexKey::Kind::NodeName ? by_node_
                                                           : by_name_;
      index.erase(key.value);
    }
  }
  owners_.erase(owner);
}

void WatchDispatcher::remove(CacheWatcher* watcher) {
  std::lock_guard lock(mu_);
  removeLocked(watcher);
}

WatchDispatcher::SnapshotStart WatchDispatcher::registerWithSnapshot(std::shared_ptr<CacheWatcher> watcher,
                                                                     uint64_t skip_through) {
  SnapshotStart start;
  start.registration = std::make_unique<Registration>(*this, watcher);
  std::lock_guard lock(mu_);
  // Under our lock no dispatch runs, so every event the snapshot lacks is still to come.
  // The snapshot may be ahead of dispatch (the store is written first): the events it
  // already contains are skipped when they arrive.
  start.snapshot = store_.snapshot();
  watcher->skip_through =
      std::max({start.snapshot->resourceVersion(), last_rv_.load(std::memory_order_relaxed), skip_through});
  addLocked(std::move(watcher));
  return start;
}

WatchDispatcher::ResumeStart WatchDispatcher::registerAfter(std::shared_ptr<CacheWatcher> watcher, uint64_t rv) {
  ResumeStart start;
  start.registration = std::make_unique<Registration>(*this, watcher);
  std::lock_guard lock(mu_);
  start.replay_through = last_rv_.load(std::memory_order_relaxed);
  watcher->skip_through = std::max(rv, start.replay_through);
  addLocked(std::move(watcher));
  return start;
}

void WatchDispatcher::onEvents(std::span<const cache::WatchEvent> events) {
  if (events.empty()) return;
  last_update_.store(clock_.now().time_since_epoch().count(), std::memory_order_relaxed);
  std::vector<std::shared_ptr<CacheWatcher>> wake;
  std::vector<std::shared_ptr<CacheWatcher>> slow;
  {
    std::lock_guard lock(mu_);
    std::vector<CacheWatcher*> touched;
    uint64_t encoded = 0;
    uint64_t visited = 0;
    uint64_t max_rv = last_rv_.load(std::memory_order_relaxed);
    for (const cache::WatchEvent& event : events) {
      max_rv = std::max(max_rv, event.resource_version);
      if (owners_.empty() || !event.object) continue;
      EventFrames frames(event, encoder_);
      auto visit = [&](const Bucket* bucket) {
        if (bucket == nullptr) return;
        visited += bucket->size();
        for (CacheWatcher* w : *bucket) {
          if (event.resource_version <= w->skip_through) continue;
          const auto delivery = w->filter().convert(event);
          if (!delivery) continue;
          if (w->pending_.empty()) touched.push_back(w);
          w->pending_.push_back(QueuedFrame{frames.get(*delivery, w->metadataOnly(), encoded), event.resource_version});
        }
      };
      auto visitIndexed = [&](std::unordered_map<std::string, Bucket>& index, std::string_view a, std::string_view b) {
        if (index.empty()) return;
        auto it = index.find(std::string(a));
        if (it != index.end()) visit(&it->second);
        if (b != a) {
          it = index.find(std::string(b));
          if (it != index.end()) visit(&it->second);
        }
      };
      const cache::ObjectMeta& meta = event.object->meta();
      visit(&all_);
      // An object keeps its namespace and name for life, so the new object's decide.
      visitIndexed(by_namespace_, meta.namespace_name, meta.namespace_name);
      visitIndexed(by_name_, meta.name, meta.name);
      visitIndexed(by_node_, nodeOf(event.object), nodeOf(event.prev_object));
    }
    for (CacheWatcher* w : touched) {
      bool needs_wake = false;
      if (w->pushGroup(w->pending_, needs_wake)) {
        if (needs_wake) wake.push_back(owners_.at(w));
      } else {
        w->pending_.clear();
        slow.push_back(owners_.at(w));
        removeLocked(w);
      }
    }
    stats_.frames_encoded_total.fetch_add(encoded, std::memory_order_relaxed);
    stats_.candidates_visited_total.fetch_add(visited, std::memory_order_relaxed);
    // Only now: everything at or below max_rv is queued (see registerAfter).
    last_rv_.store(max_rv, std::memory_order_release);
  }
  // Outside the lock (pitfall 2): waking posts to an event loop, closing wakes too.
  for (auto& w : wake) w->wake();
  // Counted by the proxy per resource (kube_cache_proxy_cached_watchers_terminated_slow_total).
  for (auto& w : slow) w->close(CacheWatcher::CloseReason::TooSlow);
}

size_t WatchDispatcher::onRelist(uint64_t list_rv) {
  last_update_.store(clock_.now().time_since_epoch().count(), std::memory_order_relaxed);
  std::vector<std::shared_ptr<CacheWatcher>> ended;
  {
    std::lock_guard lock(mu_);
    for (auto& [w, owner] : owners_) {
      if (w->skip_through < list_rv) ended.push_back(owner);
    }
    for (auto& w : ended) removeLocked(w.get());
    // Registrations from now on start at the new state: resumes from before it find the
    // store's history restarted (410), resumes after it miss nothing.
    last_rv_.store(std::max(last_rv_.load(std::memory_order_relaxed), list_rv), std::memory_order_release);
  }
  stats_.watchers_ended_by_relist_total.fetch_add(ended.size(), std::memory_order_relaxed);
  // Outside the lock (pitfall 2): closing wakes the stream.
  for (auto& w : ended) w->close(CacheWatcher::CloseReason::Relisted);
  return ended.size();
}

bool WatchDispatcher::skipThrough(CacheWatcher& watcher, uint64_t last_rv, uint64_t rv) {
  std::lock_guard lock(mu_);
  if (last_rv_.load(std::memory_order_relaxed) != last_rv) return false;
  watcher.skip_through = std::max(watcher.skip_through, rv);
  return true;
}

void WatchDispatcher::onBookmark(uint64_t rv) {
  last_update_.store(clock_.now().time_since_epoch().count(), std::memory_order_relaxed);
  std::vector<std::shared_ptr<CacheWatcher>> wake;
  {
    std::lock_guard lock(mu_);
    if (rv <= last_rv_.load(std::memory_order_relaxed)) return;
    for (auto& [w, owner] : owners_) {
      if (!w->allowBookmarks() || rv <= w->skip_through) continue;
      bool needs_wake = false;
      w->pushBookmark(rv, needs_wake);
      if (needs_wake) wake.push_back(owner);
    }
    last_rv_.store(rv, std::memory_order_release);
  }
  for (auto& w : wake) w->wake();
}

}  // namespace watch
