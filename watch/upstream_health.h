#pragma once
// UpstreamHealth: whether the upstream apiserver can be reached right now, learned from
// every connection the process makes to it (reflectors' lists and watches, pass-through
// requests, consistency fences). A circuit breaker:
//
// - Closed (up): requests go upstream as usual.
// - Open (down): after `failure_threshold` connection failures in a row with no answer in
//   between. Pass-through requests then fail fast with a 503 instead of each waiting for
//   its own connect timeout, and reflectors sleep until the upstream is back instead of
//   retrying on their backoff.
// - While down, and from the first failure of a streak on, a prober (set by cmd: one
//   cheap request) runs every `probe_interval`; the first answer from anyone (prober,
//   reflector, pass-through) ends the streak, closes the breaker and wakes every waiter,
//   so recovery is noticed within one probe interval.
//
// "Answer" means any HTTP response, whatever its status: the upstream is reachable then.
// "Failure" means no response at all: connection refused, reset, timed out, TLS failure.
//
// Thread-safe; every method may be called from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "cache/clock.h"

namespace watch {

struct UpstreamHealthOptions {
  // Consecutive failures that open the breaker. More than one, so that a single dropped
  // keep-alive connection does not fail unrelated requests.
  int failure_threshold = 3;
  std::chrono::milliseconds probe_interval{500};
};

class UpstreamHealth {
 public:
  // One request to the upstream; true when it answered (any HTTP status).
  using Probe = std::function<bool()>;

  // `clock` is borrowed and must outlive this; it times the probes, the waits and the outage.
  explicit UpstreamHealth(cache::Clock& clock, UpstreamHealthOptions options = {});
  ~UpstreamHealth();
  UpstreamHealth(const UpstreamHealth&) = delete;
  UpstreamHealth& operator=(const UpstreamHealth&) = delete;

  // Starts the prober thread (idempotent on a second call: ignored). Without it the
  // breaker closes only when some other request gets an answer.
  void startProber(Probe probe);
  // Stops the prober and wakes every waiter. Idempotent.
  void stop();

  // A request got an HTTP response.
  void answered();
  // A request got no response; `detail` says why, for the 503 message and /readyz.
  void failed(std::string_view detail);

  bool up() const { return up_.load(std::memory_order_acquire); }
  // Why the upstream was last found unreachable ("" before any failure).
  std::string lastError() const;
  // Times the breaker opened.
  uint64_t outages() const { return outages_.load(std::memory_order_relaxed); }
  // Connection failures reported.
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  // Seconds since the breaker opened (0 while up).
  double downSeconds() const;

  // Waits until the upstream is up, `timeout` passed or `stop` was requested. Returns
  // true when up.
  bool waitUntilUp(cache::Clock::Duration timeout, std::stop_token stop);
  // Waits `timeout`, or less: until the upstream answers again after failures that were
  // going on when the wait began or began during it (a reflector's backoff after its
  // connection failed: the apiserver restarting). Returns true when it ended so; false
  // when the time passed or `stop` was requested.
  bool waitForRecovery(cache::Clock::Duration timeout, std::stop_token stop);

 private:
  void proberLoop(std::stop_token stop, Probe probe);
  // Down, or failures without an answer since: what the prober probes for. Under mu_.
  bool failingLocked() const { return !up() || streak_.load(std::memory_order_relaxed) > 0; }

  cache::Clock& clock_;
  const UpstreamHealthOptions options_;
  std::atomic<bool> up_{true};
  std::atomic<uint64_t> outages_{0};
  std::atomic<uint64_t> recoveries_{0};  // answers that ended a failure streak; written under mu_
  std::atomic<uint64_t> failures_{0};
  mutable std::mutex mu_;
  std::condition_variable_any changed_;
  std::atomic<int> streak_{0};  // consecutive failures; written under mu_
  std::string last_error_;                           // guarded by mu_
  cache::Clock::TimePoint down_since_;  // guarded by mu_
  std::jthread prober_;
};

}  // namespace watch
