#pragma once
// CacheWatcher: one downstream watch stream's input (the apiserver's cacheWatcher). The
// dispatcher pushes encoded frames into a bounded queue from the reflector thread; the
// stream's io coroutine takes them out and writes them. Neither side ever waits for the
// other: a push that does not fit closes the watcher instead (the client resumes from
// its last RV, W6), and the consumer is woken through a callback the proxy installs
// (e.g. an asio::post that cancels the stream's timer), so watch/ knows no event loop.
//
// Thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "watch/fanout/event_encoder.h"
#include "watch/fanout/watch_filter.h"

namespace watch {

// One queued item: an event frame, or a bookmark (frame null) the consumer encodes.
struct QueuedFrame {
  FrameConstSharedPtr frame;
  uint64_t resource_version = 0;
  bool bookmark() const { return frame == nullptr; }
};

struct CacheWatcherOptions {
  // Events (not bytes: frames are shared with other watchers) the queue holds. A watcher
  // that falls this far behind is closed; the apiserver sizes its per-watcher channel
  // between 10 and 1000 and then waits at most ~100 ms before closing.
  size_t queue_capacity = 1000;
  bool allow_bookmarks = false;
  // The watch asked for PartialObjectMetadata (N4; protobuf caches only): its frames carry
  // each object's metadata, not the object.
  bool metadata_only = false;
};

class CacheWatcher {
 public:
  // Relisted: the store was replaced by a relist that changed it (WatchDispatcher::onRelist).
  enum class CloseReason { Open, TooSlow, Stopped, Relisted };

  CacheWatcher(WatchFilter filter, CacheWatcherOptions options);
  CacheWatcher(const CacheWatcher&) = delete;
  CacheWatcher& operator=(const CacheWatcher&) = delete;

  const WatchFilter& filter() const { return filter_; }
  bool allowBookmarks() const { return options_.allow_bookmarks; }
  bool metadataOnly() const { return options_.metadata_only; }
  // Called from any thread, without locks held, when the queue becomes non-empty or the
  // watcher closes. Set before registering with the dispatcher.
  void setWakeCallback(std::function<void()> wake);

  // --- Producer (the dispatcher) ---
  // Queues all of `frames` (the deliveries of one dispatch) or none. False when they do
  // not fit (the caller closes the watcher) or the watcher is closed.
  // `needs_wake` is set when the queue was empty: the caller calls wake() once it holds
  // no lock.
  bool pushGroup(std::vector<QueuedFrame>& frames, bool& needs_wake);
  // A bookmark is optional: dropped when the queue is full. Same `needs_wake` contract.
  void pushBookmark(uint64_t rv, bool& needs_wake);
  // Closes and wakes the consumer. Call without holding locks.
  void close(CloseReason reason);
  void wake();

  // --- Consumer (the stream) ---
  // Moves everything queued into `out` (appending); returns closeReason() as of the take.
  CloseReason takeAll(std::vector<QueuedFrame>& out);
  CloseReason closeReason() const;
  size_t queued() const;

  // Events at or below this RV are not delivered (the watcher started from a snapshot or
  // history at that RV). Set by the dispatcher at registration, read under its lock.
  uint64_t skip_through = 0;

 private:
  const WatchFilter filter_;
  CacheWatcherOptions options_;
  std::function<void()> wake_;

  mutable std::mutex mu_;
  std::vector<QueuedFrame> queue_;  // guarded by mu_
  CloseReason closed_ = CloseReason::Open;  // guarded by mu_

  friend class WatchDispatcher;
  // Dispatcher-thread scratch, guarded by the dispatcher's lock: this dispatch's frames.
  std::vector<QueuedFrame> pending_;
};

}  // namespace watch
