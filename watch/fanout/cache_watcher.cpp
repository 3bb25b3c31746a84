#include "watch/fanout/cache_watcher.h"

#include <utility>

namespace watch {

CacheWatcher::CacheWatcher(WatchFilter filter, CacheWatcherOptions options)
    : filter_(std::move(filter)), options_(options) {
  if (options_.queue_capacity == 0) options_.queue_capacity = 1;
}

void CacheWatcher::setWakeCallback(std::function<void()> wake) { wake_ = std::move(wake); }

void CacheWatcher::wake() {
  if (wake_) wake_();
}

bool CacheWatcher::pushGroup(std::vector<QueuedFrame>& frames, bool& needs_wake) {
  needs_wake = false;
  if (frames.empty()) return true;
  {
    std::lock_guard lock(mu_);
    if (closed_ != CloseReason::Open) return false;
    // A group larger than the whole queue still goes into an empty one: a watcher that
    // keeps up is never closed for the size of one dispatch.
    if (!queue_.empty() && queue_.size() + frames.size() > options_.queue_capacity) return false;
    needs_wake = queue_.empty();
    for (QueuedFrame& f : frames) queue_.push_back(std::move(f));
  }
  frames.clear();
  return true;
}

void CacheWatcher::pushBookmark(uint64_t rv, bool& needs_wake) {
  needs_wake = false;
  std::lock_guard lock(mu_);
  if (closed_ != CloseReason::Open || queue_.size() >= options_.queue_capacity) return;
  needs_wake = queue_.empty();
  queue_.push_back(QueuedFrame{nullptr, rv});
}

void CacheWatcher::close(CloseReason reason) {
  {
    std::lock_guard lock(mu_);
    if (closed_ != CloseReason::Open) return;
    closed_ = reason;
  }
  wake();
}

CacheWatcher::CloseReason CacheWatcher::takeAll(std::vector<QueuedFrame>& out) {
  std::lock_guard lock(mu_);
  if (out.empty()) {
    out.swap(queue_);
  } else {
    for (QueuedFrame& f : queue_) out.push_back(std::move(f));
    queue_.clear();
  }
  return closed_;
}

CacheWatcher::CloseReason CacheWatcher::closeReason() const {
  std::lock_guard lock(mu_);
  return closed_;
}

size_t CacheWatcher::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

}  // namespace watch
