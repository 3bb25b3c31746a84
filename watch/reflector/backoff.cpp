#include "watch/reflector/backoff.h"

#include <algorithm>

namespace watch {

Backoff::Backoff(BackoffOptions options, cache::Clock& clock, uint64_t seed)
    : options_(options), clock_(clock), random_(seed), current_(options.initial) {}

cache::Clock::Duration Backoff::next() {
  const auto now = clock_.now();
  if (has_last_ && now - last_ >= options_.reset_after) current_ = options_.initial;
  last_ = now;
  has_last_ = true;

  const auto base = current_;
  current_ = std::min<std::chrono::duration<double, std::milli>>(current_ * options_.factor, options_.cap);

  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto jittered = base * (1.0 + options_.jitter * unit(random_));
  return std::chrono::duration_cast<cache::Clock::Duration>(jittered);
}

void Backoff::reset() {
  current_ = options_.initial;
  has_last_ = false;
}

}  // namespace watch
