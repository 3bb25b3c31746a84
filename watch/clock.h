#pragma once
// Time as the reflector sees it. Everything that waits (backoff, relist spreading, the
// "very short watch" check) goes through a Clock so tests can step time instead of
// sleeping; client-go's Reflector carries a clock field for the same reason.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

namespace watch {

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;

  // Monotonic time, for intervals and deadlines.
  virtual TimePoint now() const = 0;
  // Wall-clock time, only for reporting (e.g. last sync time in stats).
  virtual std::chrono::system_clock::time_point wallNow() const = 0;
  // Waits for `d` or until `stop` is requested, whichever comes first.
  // Returns false when the wait ended because of the stop request.
  virtual bool sleepFor(Duration d, std::stop_token stop) = 0;
};

// The process clock. Thread-safe; one instance can be shared by every reflector.
class RealClock final : public Clock {
 public:
  // watch::Clock
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point wallNow() const override {
    return std::chrono::system_clock::now();
  }
  bool sleepFor(Duration d, std::stop_token stop) override {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    // Only a stop request can end the wait early; the predicate turns it into a prompt wake-up.
    cv.wait_for(lock, stop, d, [] { return false; });
    return !stop.stop_requested();
  }
};

}  // namespace watch
