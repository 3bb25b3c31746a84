#pragma once
// ChangeSignal: wakes whoever waits for something to change (a store's RV, a probe that
// lands, an informer that starts or syncs), so that waits are subscriptions instead of
// timers that poll. A waiter subscribes a callback; the next notify() runs it once and
// forgets it. The waiter re-checks its condition after subscribing (nothing is missed
// between its check and its subscription) and after each wake-up.
//
// Thread-safe: notify() may run on any thread (the reflector's, after its write and
// outside the store's lock); callbacks run on the notifying thread, so they must only
// hand the wake-up over (post to the waiter's executor), never do the waiter's work.
// With nobody waiting, notify() costs one atomic load.

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace cache {

class ChangeSignal {
 public:
  using Callback = std::function<void()>;

  // Cancels its callback when destroyed before the next notify() ran it.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(const ChangeSignal* signal, uint64_t id) : signal_(signal), id_(id) {}
    Subscription(Subscription&& other) noexcept : signal_(std::exchange(other.signal_, nullptr)), id_(other.id_) {}
    Subscription& operator=(Subscription&& other) noexcept {
      if (this != &other) {
        reset();
        signal_ = std::exchange(other.signal_, nullptr);
        id_ = other.id_;
      }
      return *this;
    }
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription() { reset(); }
    void reset();

   private:
    const ChangeSignal* signal_ = nullptr;
    uint64_t id_ = 0;
  };

  ChangeSignal() = default;
  ChangeSignal(const ChangeSignal&) = delete;
  ChangeSignal& operator=(const ChangeSignal&) = delete;

  // `callback` runs once, at the next notify(). Const: waiting does not change what is
  // waited for (readers of a const store subscribe).
  Subscription subscribe(Callback callback) const;
  void notify() const;
  size_t waitingForTest() const;

 private:
  void cancel(uint64_t id) const;

  mutable std::mutex mu_;
  mutable std::vector<std::pair<uint64_t, Callback>> waiting_;  // guarded by mu_
  mutable uint64_t next_id_ = 1;                               // guarded by mu_
  mutable std::atomic<bool> any_{false};                        // waiting_ is not empty
};

}  // namespace cache
