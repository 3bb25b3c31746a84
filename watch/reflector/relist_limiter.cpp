#include "watch/reflector/relist_limiter.h"

#include <algorithm>

namespace watch {

TokenBucketRelistLimiter::TokenBucketRelistLimiter(cache::Clock& clock, double per_second, double burst)
    : clock_(clock), per_second_(per_second), burst_(std::max(1.0, burst)), tokens_(burst_),
      updated_(clock.now()) {}

bool TokenBucketRelistLimiter::acquire(std::stop_token stop) {
  cache::Clock::Duration wait{};
  {
    std::lock_guard lock(mu_);
    const auto now = clock_.now();
    const std::chrono::duration<double> elapsed = now - updated_;
    tokens_ = std::min(burst_, tokens_ + elapsed.count() * per_second_);
    updated_ = now;
    tokens_ -= 1.0;
    if (tokens_ < 0) {
      wait = std::chrono::duration_cast<cache::Clock::Duration>(
          std::chrono::duration<double>(-tokens_ / per_second_));
    }
  }
  // A reservation abandoned by a stop is not returned: stopping is shutdown, when
  // spreading no longer matters.
  if (wait > cache::Clock::Duration::zero()) return clock_.sleepFor(wait, stop);
  return !stop.stop_requested();
}

}  // namespace watch
