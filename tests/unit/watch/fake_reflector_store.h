#pragma once
// A ReflectorStore that records every call, in order, and can be told to refuse one.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "watch/reflector/reflector_store.h"

namespace watch::testing {

struct StoreCall {
  enum class Kind { Replace, Apply, Bookmark };
  Kind kind;
  EventType type = EventType::Added;  // Apply only
  std::vector<RawObject> objects;     // Replace: the items; Apply: the one object
  uint64_t rv = 0;
};

class FakeReflectorStore final : public ReflectorStore {
 public:
  // watch::ReflectorStore
  StoreOutcome replace(std::vector<RawObject>&& items, uint64_t list_rv) override {
    std::lock_guard lock(mu_);
    calls_.push_back({StoreCall::Kind::Replace, EventType::Added, std::move(items), list_rv});
    return answer(list_rv);
  }
  StoreOutcome apply(EventType type, RawObject&& object, uint64_t rv) override {
    std::lock_guard lock(mu_);
    calls_.push_back({StoreCall::Kind::Apply, type, {std::move(object)}, rv});
    return answer(rv);
  }
  StoreOutcome bookmark(uint64_t rv) override {
    std::lock_guard lock(mu_);
    calls_.push_back({StoreCall::Kind::Bookmark, EventType::Bookmark, {}, rv});
    return answer(rv);
  }
  uint64_t resourceVersion() const override {
    std::lock_guard lock(mu_);
    return rv_;
  }

  // The n-th call from now (0 = the next) is refused with `status`.
  void refuseCall(size_t n, StoreOutcome status) {
    std::lock_guard lock(mu_);
    refusals_.push_back({calls_.size() + n, std::move(status)});
  }
  // Waits until at least `n` calls were made.
  bool waitForCalls(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) const {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return calls_.size() >= n; });
  }
  std::vector<StoreCall> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  StoreOutcome answer(uint64_t rv) {
    cv_.notify_all();
    for (auto it = refusals_.begin(); it != refusals_.end(); ++it) {
      if (it->first + 1 == calls_.size()) {
        StoreOutcome status = std::move(it->second);
        refusals_.erase(it);
        return status;
      }
    }
    rv_ = rv;
    return StoreOutcome::applied();
  }

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<StoreCall> calls_;
  std::deque<std::pair<size_t, StoreOutcome>> refusals_;  // call index -> answer
  uint64_t rv_ = 0;
};

}  // namespace watch::testing
