// The upstream breaker (watch/upstream_health.h).
#include "watch/upstream_health.h"

#include <atomic>

#include <doctest/doctest.h>

using namespace watch;
using namespace std::chrono_literals;

TEST_CASE("the breaker opens after consecutive failures and closes on the first answer") {
  UpstreamHealth health(UpstreamHealthOptions{3, 10ms});
  CHECK(health.up());
  health.failed("refused");
  health.failed("refused");
  health.answered();  // an answer in between resets the streak
  health.failed("refused");
  health.failed("refused");
  CHECK(health.up());
  health.failed("connection reset");
  CHECK_FALSE(health.up());
  CHECK(health.outages() == 1);
  CHECK(health.failures() == 5);
  CHECK(health.lastError() == "connection reset");
  health.failed("refused");
  CHECK(health.outages() == 1);  // one outage, however many failures
  health.answered();
  CHECK(health.up());
  CHECK(health.downSeconds() == 0);
}

TEST_CASE("the prober closes the breaker once the upstream answers, and wakes waiters") {
  UpstreamHealth health(UpstreamHealthOptions{1, 5ms});
  std::atomic<int> probes{0};
  std::atomic<bool> back{false};
  health.startProber([&] {
    ++probes;
    return back.load();
  });
  health.failed("refused");
  CHECK_FALSE(health.up());
  std::stop_source stop;
  CHECK_FALSE(health.waitUntilUp(30ms, stop.get_token()));
  CHECK(probes.load() >= 1);
  back = true;
  CHECK(health.waitUntilUp(10s, stop.get_token()));
  health.stop();
}

TEST_CASE("waiting ends on a stop request") {
  UpstreamHealth health(UpstreamHealthOptions{1, 5ms});
  health.failed("refused");
  std::stop_source stop;
  stop.request_stop();
  CHECK_FALSE(health.waitUntilUp(10s, stop.get_token()));
}
