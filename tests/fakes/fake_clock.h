#pragma once
// The cache::Clock of every test, in every layer: time moves only when a test steps it
// with advance(), or when someone sleeps on it. sleepFor() returns at once after
// advancing time by the requested amount and recording it, so tests check the sequence
// of waits instead of waiting for real. waitFor() returns once its condition holds, a
// stop is requested, or the clock (stepped by another thread) reaches its deadline.
// eventually() bounds how long a test waits for another thread (real time, never asserted).
// Thread-safe.

#include <chrono>
#include <functional>
#include <thread>
#include <mutex>
#include <vector>

#include "cache/clock.h"

namespace cache::testing {

class FakeClock final : public cache::Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint(std::chrono::hours(1000))) : now_(start) {}

  // cache::Clock
  TimePoint now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  WallTime wallNow() const override {
    std::lock_guard lock(mu_);
    return WallTime(std::chrono::duration_cast<WallTime::duration>(now_.time_since_epoch()));
  }
  bool sleepFor(Duration d, std::stop_token stop) override {
    std::lock_guard lock(mu_);
    sleeps_.push_back(d);
    now_ += d;
    return !stop.stop_requested();
  }
  bool waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv, Duration d,
               std::stop_token stop, const std::function<bool()>& ready) override {
    const TimePoint deadline = now() + d;
    {
      std::lock_guard clock_lock(mu_);
      waits_.push_back(d);
    }
    // A real slice only lets the loop notice a step of the fake time; it is never a timeout.
    constexpr auto kSlice = std::chrono::milliseconds(1);
    while (!ready() && !stop.stop_requested() && now() < deadline) cv.wait_for(lock, stop, kSlice, ready);
    return ready();
  }

  void advance(Duration d) {
    std::lock_guard lock(mu_);
    now_ += d;
  }
  // The durations passed to sleepFor(), in order.
  std::vector<Duration> sleeps() const {
    std::lock_guard lock(mu_);
    return sleeps_;
  }
  // The durations passed to waitFor(), in order; recorded before it blocks, so a test
  // that sees a wait here may step past its deadline.
  std::vector<Duration> waits() const {
    std::lock_guard lock(mu_);
    return waits_;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_;                // guarded by mu_
  std::vector<Duration> sleeps_;  // guarded by mu_
  std::vector<Duration> waits_;   // guarded by mu_
};

// Polls `done` until it holds; false after `limit` of real time. Only bounds how long a
// test waits for another thread; no test asserts on how long anything took.
inline bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = cache::RealClock::instance().now() + limit;
  while (!done()) {
    if (cache::RealClock::instance().now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace cache::testing
