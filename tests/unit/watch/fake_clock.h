#pragma once
// A Clock whose time only moves when someone sleeps on it: sleepFor() returns at once
// after advancing time by the requested amount and recording it. Tests then check the
// sequence of waits instead of waiting for real.

#include <mutex>
#include <vector>

#include "watch/clock.h"

namespace watch::testing {

class FakeClock final : public Clock {
 public:
  // watch::Clock
  TimePoint now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  std::chrono::system_clock::time_point wallNow() const override {
    std::lock_guard lock(mu_);
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(now_.time_since_epoch()));
  }
  bool sleepFor(Duration d, std::stop_token stop) override {
    std::lock_guard lock(mu_);
    sleeps_.push_back(d);
    now_ += d;
    return !stop.stop_requested();
  }

  void advance(Duration d) {
    std::lock_guard lock(mu_);
    now_ += d;
  }
  std::vector<Duration> sleeps() const {
    std::lock_guard lock(mu_);
    return sleeps_;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_{std::chrono::hours(1000)};
  std::vector<Duration> sleeps_;
};

}  // namespace watch::testing
