#pragma once
// FailureLimiter: how many failed authentications one client address may cause. Each
// failed token costs a TokenReview under the proxy's own identity; a flood of random tokens
// would spend the proxy's API priority-and-fairness share and lock every tenant out
// (issue 16, finding 8). A token bucket per address: `burst` failures at once, then `rate`
// per second; beyond that, unknown tokens from the address get 429 without a review.
// Known tokens (in the decision cache) are never held back: they cost nothing upstream.
//
// Thread-safe; bounded: at `max_addresses` the table starts over (a forgotten address
// only gets a fresh budget).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cache/clock.h"

namespace proxy::auth {

class FailureLimiter {
 public:
  FailureLimiter(double rate, double burst, size_t max_addresses = 10000,
                 const cache::Clock& clock = cache::RealClock::instance())
      : rate_(rate), burst_(burst), max_addresses_(max_addresses), clock_(clock) {}

  // True when `address` has no failure left to spend now.
  bool exhausted(const std::string& address) {
    std::lock_guard lock(mu_);
    auto it = buckets_.find(address);
    if (it == buckets_.end()) return false;
    refill(it->second);
    return it->second.tokens < 1.0;
  }

  // A failed authentication from `address`.
  void failed(const std::string& address) {
    std::lock_guard lock(mu_);
    if (buckets_.size() >= max_addresses_ && buckets_.count(address) == 0) buckets_.clear();
    auto [it, created] = buckets_.try_emplace(address, Bucket{burst_, clock_.now()});
    if (!created) refill(it->second);
    it->second.tokens = std::max(0.0, it->second.tokens - 1.0);
  }

 private:
  struct Bucket {
    double tokens;
    cache::Clock::TimePoint at;
  };
  void refill(Bucket& b) const {
    const auto now = clock_.now();
    const double seconds = std::chrono::duration<double>(now - b.at).count();
    b.tokens = std::min(burst_, b.tokens + seconds * rate_);
    b.at = now;
  }

  const double rate_;
  const double burst_;
  const size_t max_addresses_;
  const cache::Clock& clock_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;  // guarded by mu_
};

}  // namespace proxy::auth
