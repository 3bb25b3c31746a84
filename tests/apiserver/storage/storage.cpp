#include "tests/apiserver/storage/storage.h"

#include <algorithm>

namespace testapi {

const char* eventTypeName(EventType t) {
  switch (t) {
    case EventType::Added: return "ADDED";
    case EventType::Modified: return "MODIFIED";
    case EventType::Deleted: return "DELETED";
  }
  return "ERROR";
}

// ---- WatchQueue ----

void WatchQueue::push(EventPtr ev) {
  {
    std::lock_guard lk(mu_);
    if (closed_) return;
    if (events_.size() >= capacity_) {
      closed_ = true;
      events_.clear();
    } else {
      events_.push_back(std::move(ev));
    }
  }
  cv_.notify_one();
}

EventPtr WatchQueue::pop(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lk(mu_);
  cv_.wait_until(lk, deadline, [&] { return closed_ || !events_.empty(); });
  if (events_.empty()) return nullptr;
  auto ev = std::move(events_.front());
  events_.pop_front();
  return ev;
}

void WatchQueue::close() {
  {
    std::lock_guard lk(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

void WatchQueue::cut() {
  {
    std::lock_guard lk(mu_);
    cut_ = true;
  }
  close();
}

bool WatchQueue::wasCut() const {
  std::lock_guard lk(mu_);
  return cut_;
}

bool WatchQueue::closed() const {
  std::lock_guard lk(mu_);
  return closed_ && events_.empty();
}

bool WatchQueue::empty() const {
  std::lock_guard lk(mu_);
  return events_.empty();
}

// ---- Storage ----

Storage::Storage(const ResourceCatalog& catalog, StorageOptions opts) : catalog_(catalog), opts_(opts) {
  if (opts_.history_size == 0) opts_.history_size = 1;
  if (opts_.watch_queue_capacity == 0) opts_.watch_queue_capacity = opts_.history_size + 1000;
  // Every cacher starts with a list at the current revision.
  for (const auto& r : catalog_.resources()) states_[&r].cache_rv = rv_;
}

Storage::ResourceState& Storage::stateLocked(const ServedResource& res) {
  auto [it, created] = states_.try_emplace(&res);
  // The cacher starts with a list at the current revision.
  if (created) it->second.cache_rv = rv_;
  return it->second;
}

const Storage::ResourceState* Storage::stateLocked(const ServedResource& res) const {
  auto it = states_.find(&res);
  return it == states_.end() ? nullptr : &it->second;
}

uint64_t Storage::currentRv() const {
  std::lock_guard lk(mu_);
  return rv_;
}

uint64_t Storage::compactedRv() const {
  std::lock_guard lk(mu_);
  return compacted_rv_;
}

uint64_t Storage::watchWindowStartRv() const {
  std::lock_guard lk(mu_);
  return std::max(compacted_rv_, restarted_rv_);
}

bool Storage::waitForRv(uint64_t rv, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lk(mu_);
  return rv_cv_.wait_until(lk, deadline, [&] { return rv_ >= rv; });
}

StoredObjectPtr Storage::get(const ServedResource& res, std::string_view ns, std::string_view name) const {
  std::lock_guard lk(mu_);
  const auto* st = stateLocked(res);
  if (!st) return nullptr;
  auto it = st->objects.find(storageKey(res.def.namespaced ? ns : "", name));
  return it == st->objects.end() ? nullptr : it->second;
}

std::optional<Storage::Snapshot> Storage::list(const ServedResource& res, std::string_view ns,
                                               std::optional<uint64_t> at_rv) const {
  std::lock_guard lk(mu_);
  const auto* st = stateLocked(res);
  Snapshot snap;
  snap.rv = rv_;
  if (!st) return snap;
  const std::string prefix = ns.empty() ? std::string() : std::string(ns) + "/";
  auto inScope = [&](const std::string& key) { return prefix.empty() || key.compare(0, prefix.size(), prefix) == 0; };
  auto begin = prefix.empty() ? st->objects.begin() : st->objects.lower_bound(prefix);
  if (!at_rv || *at_rv == rv_) {
    for (auto it = begin; it != st->objects.end() && inScope(it->first); ++it) snap.items.push_back(it->second);
    return snap;
  }
  if (*at_rv < compacted_rv_ || *at_rv > rv_) return std::nullopt;
  // Roll the current state back over every retained event newer than at_rv.
  std::map<std::string, StoredObjectPtr> past;
  for (auto it = begin; it != st->objects.end() && inScope(it->first); ++it) past.emplace(it->first, it->second);
  for (auto it = history_.rbegin(); it != history_.rend() && (*it)->rv > *at_rv; ++it) {
    const Event& ev = **it;
    if (ev.resource != &res) continue;
    const std::string& key = ev.object->key;
    if (!inScope(key)) continue;
    if (ev.type == EventType::Added)
      past.erase(key);
    else
      past[key] = ev.prev;
  }
  snap.rv = *at_rv;
  snap.items.reserve(past.size());
  for (auto& [k, v] : past) snap.items.push_back(std::move(v));
  return snap;
}

void Storage::appendEventLocked(EventPtr ev) {
  auto& st = stateLocked(*ev->resource);
  st.cache_rv = std::max(st.cache_rv, ev->rv);
  for (const auto& w : st.watchers) w->push(ev);
  history_.push_back(std::move(ev));
  while (history_.size() > opts_.history_size) {
    compacted_rv_ = history_.front()->rv;
    history_.pop_front();
  }
}

Result<StoredObjectPtr> Storage::mutate(const ServedResource& res, std::string_view ns, std::string_view name,
                                        const MutateFn& fn) {
  std::unique_lock lk(mu_);
  auto& st = stateLocked(res);
  const std::string key = storageKey(res.def.namespaced ? ns : "", name);
  auto it = st.objects.find(key);
  StoredObjectPtr current = it == st.objects.end() ? nullptr : it->second;
  const uint64_t next_rv = rv_ + 1;
  auto r = fn(current, next_rv);
  if (auto* err = std::get_if<ApiError>(&r)) return *err;
  auto& m = std::get<Mutation>(r);
  switch (m.action) {
    case Mutation::Action::None:
      return m.object;
    case Mutation::Action::Put: {
      rv_ = next_rv;
      auto ev = std::make_shared<Event>(Event{current ? EventType::Modified : EventType::Added, rv_, &res, m.object, current});
      st.objects[m.object->key] = m.object;
      appendEventLocked(std::move(ev));
      break;
    }
    case Mutation::Action::Remove: {
      if (!current) return notFound(res.def, name);
      rv_ = next_rv;
      st.objects.erase(key);
      appendEventLocked(std::make_shared<Event>(Event{EventType::Deleted, rv_, &res, m.object, current}));
      break;
    }
  }
  lk.unlock();
  rv_cv_.notify_all();
  return m.object;
}

bool Storage::silentUpdate(const ServedResource& res, std::string_view ns, std::string_view name,
                           const std::function<StoredObjectPtr(const StoredObject&, uint64_t rv)>& fn) {
  std::unique_lock lk(mu_);
  auto& st = stateLocked(res);
  auto it = st.objects.find(storageKey(res.def.namespaced ? ns : "", name));
  if (it == st.objects.end()) return false;
  ++rv_;
  // No event: watchers and the history never learn of this version, exactly the drift
  // a cache would have after missing an update. Rolling back past it restores the
  // last evented state, as the history still holds it.
  it->second = fn(*it->second, rv_);
  lk.unlock();
  rv_cv_.notify_all();
  return true;
}

std::optional<Storage::WatchStart> Storage::watch(const ServedResource& res, std::string_view ns, bool initial_state,
                                                  uint64_t from_rv) {
  std::lock_guard lk(mu_);
  auto& st = stateLocked(res);
  WatchStart ws;
  ws.queue = std::make_shared<WatchQueue>(opts_.watch_queue_capacity);
  const std::string prefix = ns.empty() ? std::string() : std::string(ns) + "/";
  if (initial_state) {
    auto begin = prefix.empty() ? st.objects.begin() : st.objects.lower_bound(prefix);
    for (auto it = begin; it != st.objects.end(); ++it) {
      if (!prefix.empty() && it->first.compare(0, prefix.size(), prefix) != 0) break;
      ws.initial.push_back(it->second);
    }
    ws.start_rv = rv_;
  } else {
    if (from_rv < std::max(compacted_rv_, restarted_rv_)) return std::nullopt;
    ws.start_rv = from_rv;
    for (const auto& ev : history_)
      if (ev->rv > from_rv && ev->resource == &res) ws.queue->push(ev);
  }
  st.watchers.insert(ws.queue);
  return ws;
}

void Storage::unwatch(const ServedResource& res, const WatchQueuePtr& q) {
  std::lock_guard lk(mu_);
  stateLocked(res).watchers.erase(q);
}

std::optional<uint64_t> Storage::idleRv(const ServedResource& res, const WatchQueue& q) const {
  std::lock_guard lk(mu_);
  if (!q.empty()) return std::nullopt;
  const ResourceState* st = stateLocked(res);
  return st ? st->cache_rv : rv_;
}

void Storage::progress(const ServedResource& res) {
  std::lock_guard lk(mu_);
  stateLocked(res).cache_rv = rv_;
}

void Storage::compact() {
  std::lock_guard lk(mu_);
  history_.clear();
  compacted_rv_ = rv_;
}

size_t Storage::dropWatches() {
  std::lock_guard lk(mu_);
  size_t n = 0;
  for (auto& [res, st] : states_) {
    for (const auto& w : st.watchers) w->close();
    n += st.watchers.size();
    st.watchers.clear();
  }
  return n;
}

uint64_t Storage::restart() {
  std::unique_lock lk(mu_);
  // The new process writes before its caches list (its identity Lease: measured on
  // kube-apiserver 1.37.2, two revisions between the last one before the restart and
  // the caches' list), so no client has seen the revision the caches start at, and a
  // watch resumed from the last RV it saw is too old. One revision, no served object.
  restarted_rv_ = ++rv_;
  for (auto& [res, st] : states_) {
    // The new cacher's list is at the current revision, whatever its resource's last event.
    st.cache_rv = rv_;
    for (const auto& w : st.watchers) w->cut();
  }
  lk.unlock();
  rv_cv_.notify_all();
  return restarted_rv_;
}

std::map<std::string, size_t> Storage::openWatchCounts() const {
  std::lock_guard lk(mu_);
  std::map<std::string, size_t> out;
  for (const auto& [res, st] : states_) out[res->def.qualifiedResource()] = st.watchers.size();
  return out;
}

size_t Storage::objectCount(const ServedResource& res) const {
  std::lock_guard lk(mu_);
  const auto* st = stateLocked(res);
  return st ? st->objects.size() : 0;
}

}  // namespace testapi
