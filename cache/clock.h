#pragma once
// The process's one time source. Everything that ages, waits or times out (history
// eviction, reflector backoff, breaker probes, freshness bookkeeping, idle connections)
// reads a Clock so tests can step time instead of sleeping or asserting that something
// "took < N s" (style: "Time and randomness are injected"); client-go's Reflector carries
// a clock field for the same reason. It lives in cache/, the lowest layer, so that watch/
// and proxy/ share it. The one test implementation is tests/fakes/fake_clock.h.
//
// Thread-safe: one instance is shared by every component of the process.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>

namespace cache {

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;

  // Monotonic time, for intervals and deadlines.
  virtual TimePoint now() const = 0;
  // Wall-clock time, only for reporting (last save time, log lines); never for intervals.
  virtual WallTime wallNow() const = 0;
  // Waits for `d` or until `stop` is requested, whichever comes first. Returns false when
  // the wait ended because of the stop request.
  virtual bool sleepFor(Duration d, std::stop_token stop) = 0;
  // Waits until `ready()` holds, `d` passed on this clock or `stop` was requested.
  // `lock` holds the mutex that guards what `ready` reads, and whoever changes that state
  // notifies `cv`. Returns ready().
  virtual bool waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv, Duration d,
                       std::stop_token stop, const std::function<bool()>& ready) = 0;
};

// The process clock: steady_clock and system_clock.
class RealClock final : public Clock {
 public:
  // cache::Clock
  TimePoint now() const override;
  WallTime wallNow() const override;
  bool sleepFor(Duration d, std::stop_token stop) override;
  bool waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv, Duration d,
               std::stop_token stop, const std::function<bool()>& ready) override;

  // For defaults of components that are not wired by cmd (tests, tools).
  static RealClock& instance();
};

}  // namespace cache
