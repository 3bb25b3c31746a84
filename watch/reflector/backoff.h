#pragma once
// Jittered exponential backoff between upstream retries (contract K1.6, the numbers of
// client-go's reflector): 800 ms, doubling, capped at 30 s, each delay stretched by a
// random factor in [1, 1 + jitter), and back to the start once the upstream has been
// healthy for 2 minutes. The jitter is what keeps a fleet of reflectors that failed
// together (apiserver restart) from retrying together.
//
// Not thread-safe: one Backoff per reflector.

#include <chrono>
#include <cstdint>
#include <random>

#include "cache/clock.h"

namespace watch {

struct BackoffOptions {
  std::chrono::milliseconds initial{800};
  double factor = 2.0;
  std::chrono::milliseconds cap{30'000};
  // Each delay d becomes d * (1 + jitter * u), u uniform in [0, 1).
  double jitter = 1.0;
  // A delay requested this long after the previous one starts again at `initial`.
  std::chrono::milliseconds reset_after{120'000};
};

class Backoff {
 public:
  Backoff(BackoffOptions options, cache::Clock& clock, uint64_t seed);

  // The next delay to wait before retrying.
  cache::Clock::Duration next();
  // Forgets past failures: the next delay is `initial` again.
  void reset();

 private:
  BackoffOptions options_;
  cache::Clock& clock_;
  std::mt19937_64 random_;
  // The un-jittered delay next() will hand out; within [initial, cap].
  std::chrono::duration<double, std::milli> current_;
  // When next() was last called; unset before the first failure.
  cache::Clock::TimePoint last_{};
  bool has_last_ = false;
};

}  // namespace watch
