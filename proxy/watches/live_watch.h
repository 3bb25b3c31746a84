#pragma once
// LiveWatch: the live phase of one cached watch (proxy/watches/cached_watch.cpp), and how the
// dispatcher's thread wakes it: Waker per stream, WakeHub per io thread. A parked stream
// whose client keeps up gets its frames written by the wake-up itself.

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "proxy/asio_beast.h"
#include "proxy/stream.h"
#include "watch/fanout/cache_watcher.h"
#include "watch/fanout/event_encoder.h"

namespace proxy::io {

// What the stream coroutine and its wake-ups share on the stream's io thread (never
// touched from another thread): the writer, the watcher's queue and the stream's RV.
struct LiveWatch {
  LiveWatch(std::shared_ptr<watch::CacheWatcher> w, const watch::BookmarkEncoder& b)
      : watcher(std::move(w)), bookmarks(b) {}

  // Moves the watcher's queue into `out`: frames as they are, bookmarks encoded when they
  // move the stream's RV forward (W7: never backwards).
  // Returns whether the watcher was still open when its queue was taken.
  watch::CacheWatcher::CloseReason takeQueued() {
    batch.clear();
    const auto state = watcher->takeAll(batch);
    for (auto& item : batch) {
      if (item.bookmark()) {
        if (item.resource_version > last_rv) {
          out->add(bookmarks.frame(item.resource_version));
          last_rv = item.resource_version;
          ++events_sent;
        }
        continue;
      }
      out->add(std::move(item.frame));
      last_rv = item.resource_version;
      ++events_sent;
    }
    return state;
  }

  // Called by a wake-up while the coroutine is parked: writes the queue without waking
  // it. False when the coroutine must run (a partial write, an error, a closed watcher);
  // what was taken stays in `out` for it.
  bool deliverInline() {
    if (!parked || !out->empty()) return false;
    if (takeQueued() != watch::CacheWatcher::CloseReason::Open) return false;
    error_code ec;
    return out->trySend(ec);
  }

  // Set once the stream's head is written (ServerStream::startEvents); the live phase,
  // the only one that parks, starts after that.
  EventWriter* out = nullptr;
  std::shared_ptr<watch::CacheWatcher> watcher;
  const watch::BookmarkEncoder& bookmarks;
  std::vector<watch::QueuedFrame> batch;
  // The RV the stream started at (after its initial state or replay: the snapshot's,
  // or the one it resumed from): no bookmark at or below it (W7).
  uint64_t start_rv = 0;
  uint64_t last_rv = 0;
  uint64_t events_sent = 0;
  bool parked = false;  // the coroutine waits on its wake timer with nothing to write
};

// Wakes the stream's coroutine from the dispatcher's thread. Disarmed before the
// coroutine's io_context can go away, so a late dispatch never posts into it.
struct Waker {
  std::mutex mu;
  bool armed = true;  // guarded by mu: false once the dispatcher must not post any more

  // The rest is only touched on the stream's io thread. The pointers are into the
  // coroutine's frame and valid while `alive`, which the coroutine clears (WakerGuard)
  // before any of them goes away; plain pointers, not weak ones, because locking two
  // weak pointers was two cold control blocks per delivery.
  bool alive = true;
  asio::steady_timer* timer = nullptr;
  LiveWatch* live = nullptr;

  // A parked stream whose client keeps up gets its frames written here, with no timer
  // cancelled and re-armed and no coroutine resumed per event.
  void run() {
    if (!alive) return;
    if (live->deliverInline()) return;
    timer->cancel();
    // A watcher closed for being slow is usually stuck in a write to a client that does
    // not read: abort it, so its socket buffers and queue are freed now (W6).
    if (live->out && live->watcher->closeReason() == watch::CacheWatcher::CloseReason::TooSlow) live->out->cancel();
  }
};

// One per io thread: the wake-ups of one dispatch (one event to thousands of watchers)
// become one post to the event loop instead of one each, which saves an eventfd write
// and a handler allocation per watcher.
class WakeHub : public std::enable_shared_from_this<WakeHub> {
 public:
  explicit WakeHub(asio::any_io_executor executor) : executor_(std::move(executor)) {}

  // The hub of the calling io thread.
  static std::shared_ptr<WakeHub> forThisThread(const asio::any_io_executor& executor) {
    thread_local std::shared_ptr<WakeHub> hub;
    if (!hub) hub = std::make_shared<WakeHub>(executor);
    return hub;
  }

  void wake(std::shared_ptr<Waker> waker) {
    std::lock_guard lock(mu_);
    pending_.push_back(std::move(waker));
    if (posted_) return;
    posted_ = true;
    asio::post(executor_, [self = shared_from_this()] { self->run(); });
  }

 private:
  void run() {
    std::vector<std::shared_ptr<Waker>> ready;
    {
      std::lock_guard lock(mu_);
      ready.swap(pending_);
      posted_ = false;
    }
    for (auto& waker : ready) waker->run();
  }

  asio::any_io_executor executor_;
  std::mutex mu_;
  bool posted_ = false;
  std::vector<std::shared_ptr<Waker>> pending_;
};

// The callback the dispatcher calls: queues `waker` on its io thread's hub unless the
// stream is over.
inline void wakeStream(const std::shared_ptr<Waker>& waker, const std::shared_ptr<WakeHub>& hub) {
  std::lock_guard lock(waker->mu);
  if (waker->armed) hub->wake(waker);
}

struct WakerGuard {
  std::shared_ptr<Waker> waker;
  // On the io thread, before the timer, the LiveWatch or the stream can go away.
  void disarm() {
    waker->alive = false;
    std::lock_guard lock(waker->mu);
    waker->armed = false;
  }
  ~WakerGuard() { disarm(); }
};

}  // namespace proxy::io
