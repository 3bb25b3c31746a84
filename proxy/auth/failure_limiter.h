#pragma once
// FailureLimiter: how many failed authentications one client address may cause. Each
// failed token costs a TokenReview under the proxy's own identity; a flood of random tokens
// would spend the proxy's API priority-and-fairness share and lock every tenant out
// (issue 16, finding 8). A token bucket per address: `burst` failures at once, then `rate`
// per second; beyond that, unknown tokens from the address get 429 without a review.
// Known tokens (in the decision cache) are never held back: they cost nothing upstream.
// Nor is a token the proxy has seen succeed before, once its cached answer expired: an
// attacker behind the same address (NAT, a node's IP) must not lock a good user out; and
// only a denial that cost a review spends the budget (a remembered one cost nothing).
//
// Thread-safe; bounded: at `max_addresses` the table starts over (a forgotten address
// only gets a fresh budget).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

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

  // A token (its digest) authenticated: never held back by an address's budget again.
  void succeeded(const std::string& token_key) {
    std::lock_guard lock(mu_);
    if (succeeded_.size() >= max_addresses_) succeeded_.clear();  // bounded like the buckets
    succeeded_.insert(token_key);
  }
  bool succeededBefore(const std::string& token_key) const {
    std::lock_guard lock(mu_);
    return succeeded_.count(token_key) > 0;
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
  mutable std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;  // guarded by mu_
  std::unordered_set<std::string> succeeded_;        // guarded by mu_: token digests
};

}  // namespace proxy::auth
