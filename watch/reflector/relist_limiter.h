#pragma once
// RelistLimiter spreads full relists over time. After an apiserver outage every reflector
// needs a relist at about the same moment, and a relist is the most expensive request a
// client can make (a full consistent LIST); client-go learned this the hard way
// (kubernetes/kubernetes#86483). cmd shares one limiter among all reflectors.
//
// Thread-safe.

#include <chrono>
#include <mutex>
#include <stop_token>

#include "cache/clock.h"

namespace watch {

class RelistLimiter {
 public:
  virtual ~RelistLimiter() = default;
  // Blocks until this relist may start. Returns false if `stop` was requested first.
  virtual bool acquire(std::stop_token stop) = 0;
};

// No limit: every relist starts at once.
class UnlimitedRelistLimiter final : public RelistLimiter {
 public:
  // watch::RelistLimiter
  bool acquire(std::stop_token stop) override { return !stop.stop_requested(); }
};

// Token bucket: `burst` relists at once, then one every 1/`per_second` seconds. Waiters
// reserve their slot under the lock and sleep outside it, so N waiters are spread
// evenly instead of waking together.
class TokenBucketRelistLimiter final : public RelistLimiter {
 public:
  TokenBucketRelistLimiter(cache::Clock& clock, double per_second, double burst);

  // watch::RelistLimiter
  bool acquire(std::stop_token stop) override;

 private:
  cache::Clock& clock_;
  const double per_second_;
  const double burst_;
  std::mutex mu_;
  // Tokens available at `updated_`; negative when slots are already reserved ahead.
  double tokens_;
  cache::Clock::TimePoint updated_;
};

}  // namespace watch
