#include "cache/clock.h"

namespace cache {

Clock::TimePoint RealClock::now() const { return std::chrono::steady_clock::now(); }

Clock::WallTime RealClock::wallNow() const { return std::chrono::system_clock::now(); }

bool RealClock::sleepFor(Duration d, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  // Only a stop request can end the wait early; the predicate turns it into a prompt wake-up.
  cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

bool RealClock::waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv, Duration d,
                        std::stop_token stop, const std::function<bool()>& ready) {
  cv.wait_for(lock, stop, d, ready);
  return ready();
}

RealClock& RealClock::instance() {
  static RealClock clock;
  return clock;
}

}  // namespace cache
