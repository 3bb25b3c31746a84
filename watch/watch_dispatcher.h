#pragma once
// WatchDispatcher: fans one resource's store events out to its downstream watches
// (issue #6). The informer owns one per store and the reflector side feeds it after each
// store write, outside the store's lock, in store order.
//
// Thread-safe.

#include <cstdint>
#include <span>

#include "cache/event_history.h"
#include "cache/thread_safe_store.h"

namespace watch {

class WatchDispatcher {
 public:
  explicit WatchDispatcher(const cache::ThreadSafeStore& store);
  ~WatchDispatcher();
  WatchDispatcher(const WatchDispatcher&) = delete;
  WatchDispatcher& operator=(const WatchDispatcher&) = delete;

  // Events the store just recorded (one apply, or the synthetic differences of one
  // replace), in history order.
  void onEvents(std::span<const cache::WatchEvent> events);
  // The store's RV moved to `rv` without an event (upstream bookmark).
  void onBookmark(uint64_t rv);

  const cache::ThreadSafeStore& store() const { return store_; }

 private:
  const cache::ThreadSafeStore& store_;
};

}  // namespace watch
