#include "watch/upstream_health.h"

#include <utility>

namespace watch {

UpstreamHealth::UpstreamHealth(cache::Clock& clock, UpstreamHealthOptions options)
    : clock_(clock), options_(options) {}

UpstreamHealth::~UpstreamHealth() { stop(); }

void UpstreamHealth::startProber(Probe probe) {
  if (prober_.joinable() || !probe) return;
  prober_ = std::jthread([this, probe = std::move(probe)](std::stop_token stop) { proberLoop(stop, probe); });
}

void UpstreamHealth::stop() {
  if (prober_.joinable()) {
    prober_.request_stop();
    prober_.join();
  }
  std::lock_guard lock(mu_);
  changed_.notify_all();
}

void UpstreamHealth::answered() {
  // The common case (up, no failure streak) costs one atomic load and no lock.
  if (up() && streak_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(mu_);
  if (!failingLocked()) return;
  streak_.store(0, std::memory_order_relaxed);
  up_.store(true, std::memory_order_release);
  recoveries_.fetch_add(1, std::memory_order_relaxed);
  changed_.notify_all();
}

void UpstreamHealth::failed(std::string_view detail) {
  failures_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  last_error_.assign(detail);
  const int streak = streak_.load(std::memory_order_relaxed) + 1;
  streak_.store(streak, std::memory_order_relaxed);
  if (streak >= options_.failure_threshold && up_.exchange(false, std::memory_order_acq_rel)) {
    outages_.fetch_add(1, std::memory_order_relaxed);
    down_since_ = clock_.now();
    changed_.notify_all();
  } else if (streak == 1) {
    changed_.notify_all();  // the prober starts probing
  }
}

std::string UpstreamHealth::lastError() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

double UpstreamHealth::downSeconds() const {
  std::lock_guard lock(mu_);
  if (up()) return 0;
  return std::chrono::duration<double>(clock_.now() - down_since_).count();
}

bool UpstreamHealth::waitUntilUp(cache::Clock::Duration timeout, std::stop_token stop) {
  std::unique_lock lock(mu_);
  return clock_.waitFor(lock, changed_, timeout, stop, [this] { return up(); });
}

bool UpstreamHealth::waitForRecovery(cache::Clock::Duration timeout, std::stop_token stop) {
  std::unique_lock lock(mu_);
  // Counted under mu_ by the answer that ends a streak, which notifies.
  const uint64_t since = recoveries_.load(std::memory_order_relaxed);
  return clock_.waitFor(lock, changed_, timeout, stop,
                        [this, since] { return recoveries_.load(std::memory_order_relaxed) > since; });
}

void UpstreamHealth::proberLoop(std::stop_token stop, Probe probe) {
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mu_);
      changed_.wait(lock, stop, [this] { return failingLocked(); });
    }
    if (stop.stop_requested()) return;
    if (probe()) {
      answered();
      continue;
    }
    std::unique_lock lock(mu_);
    clock_.waitFor(lock, changed_, options_.probe_interval, stop, [this] { return !failingLocked(); });
  }
}

}  // namespace watch
