#include "cache/change_signal.h"

#include <algorithm>

namespace cache {

void ChangeSignal::Subscription::reset() {
  if (signal_) signal_->cancel(id_);
  signal_ = nullptr;
}

ChangeSignal::Subscription ChangeSignal::subscribe(Callback callback) const {
  std::lock_guard lock(mu_);
  const uint64_t id = next_id_++;
  waiting_.emplace_back(id, std::move(callback));
  any_.store(true, std::memory_order_release);
  // Pairs with the fence in notify(): either notify() sees this subscription, or the
  // subscriber's re-check after this call sees the change (the two sides' store-then-load
  // would otherwise both read stale values).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return Subscription(this, id);
}

void ChangeSignal::notify() const {
  // A subscriber that checked its condition before this change and subscribed after the
  // load below is not missed: it re-checks its condition after subscribing (see subscribe).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!any_.load(std::memory_order_acquire)) return;
  std::vector<std::pair<uint64_t, Callback>> ready;
  {
    std::lock_guard lock(mu_);
    ready.swap(waiting_);
    any_.store(false, std::memory_order_release);
  }
  for (auto& [id, callback] : ready) callback();
}

void ChangeSignal::cancel(uint64_t id) const {
  std::lock_guard lock(mu_);
  std::erase_if(waiting_, [id](const auto& entry) { return entry.first == id; });
  any_.store(!waiting_.empty(), std::memory_order_release);
}

size_t ChangeSignal::waitingForTest() const {
  std::lock_guard lock(mu_);
  return waiting_.size();
}

}  // namespace cache
