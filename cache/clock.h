#pragma once
// Time source for everything in cache/ that ages or waits, injected so tests can step
// time instead of sleeping (style: "Time and randomness are injected").

#include <chrono>

namespace cache {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual time_point now() const = 0;
};

class RealClock final : public Clock {
 public:
  // cache::Clock
  time_point now() const override { return std::chrono::steady_clock::now(); }

  static Clock& instance() {
    static RealClock clock;
    return clock;
  }
};

}  // namespace cache
