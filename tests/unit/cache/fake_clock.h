#pragma once
// A cache::Clock for tests: time moves only when the test says so.

#include <atomic>
#include <chrono>

#include "cache/clock.h"

namespace cache::testing {

// A clock that only moves when told to. Thread-safe.
class FakeClock final : public cache::Clock {
 public:
  explicit FakeClock(time_point start = time_point{} + std::chrono::hours(1)) : now_(start.time_since_epoch().count()) {}
  // cache::Clock
  time_point now() const override { return time_point(time_point::duration(now_.load())); }
  void advance(std::chrono::steady_clock::duration by) { now_.fetch_add(by.count()); }

 private:
  std::atomic<time_point::rep> now_;
};

}  // namespace cache::testing
