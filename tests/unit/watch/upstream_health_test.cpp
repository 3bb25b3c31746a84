// The upstream breaker (watch/upstream_health.h), on a stepped clock.
#include "watch/upstream_health.h"

#include <atomic>
#include <optional>
#include <thread>

#include <doctest/doctest.h>

#include "tests/fakes/fake_clock.h"

using namespace watch;
using namespace std::chrono_literals;
using cache::testing::eventually;
using cache::testing::FakeClock;

TEST_CASE("the breaker opens after consecutive failures and closes on the first answer") {
  FakeClock clock;
  UpstreamHealth health(clock, UpstreamHealthOptions{3, 10ms});
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
  clock.advance(3s);
  CHECK(health.downSeconds() == 3);
  health.failed("refused");
  CHECK(health.outages() == 1);  // one outage, however many failures
  health.answered();
  CHECK(health.up());
  CHECK(health.downSeconds() == 0);
}

TEST_CASE("the prober probes once per interval on the clock, closes the breaker once the upstream answers, and wakes waiters") {
  FakeClock clock;
  UpstreamHealth health(clock, UpstreamHealthOptions{1, 5s});
  std::atomic<int> probes{0};
  std::atomic<bool> back{false};
  health.startProber([&] {
    ++probes;
    return back.load();
  });
  health.failed("refused");
  CHECK_FALSE(health.up());
  // The first probe leaves at once; the next waits for the interval to pass on the clock.
  REQUIRE(eventually([&] { return clock.waits().size() == 1; }));
  CHECK(probes.load() == 1);
  CHECK(clock.waits()[0] == 5s);
  CHECK_FALSE(health.up());

  back = true;
  std::optional<bool> woke;
  std::jthread waiter([&](std::stop_token stop) { woke = health.waitUntilUp(1h, stop); });
  REQUIRE(eventually([&] { return clock.waits().size() == 2; }));  // the waiter is waiting
  clock.advance(5s);  // the prober's interval passes: it probes and the upstream answers
  waiter.join();
  CHECK(woke == true);
  CHECK(probes.load() == 2);
  CHECK(health.up());
  health.stop();
}

TEST_CASE("waiting gives up when its timeout passes on the clock") {
  FakeClock clock;
  UpstreamHealth health(clock, UpstreamHealthOptions{1, 5s});
  health.failed("refused");
  std::optional<bool> woke;
  std::jthread waiter([&](std::stop_token stop) { woke = health.waitUntilUp(30s, stop); });
  REQUIRE(eventually([&] { return clock.waits().size() == 1; }));
  clock.advance(29s);
  CHECK_FALSE(woke.has_value());
  clock.advance(1s);
  waiter.join();
  CHECK(woke == false);
}

TEST_CASE("waiting for recovery ends at the answer after failures, else on its timeout") {
  FakeClock clock;
  UpstreamHealth health(clock, UpstreamHealthOptions{2, 5s});
  SUBCASE("an outage begins and ends during the wait") {
    std::optional<bool> recovered;
    std::jthread waiter([&](std::stop_token stop) { recovered = health.waitForRecovery(1h, stop); });
    REQUIRE(eventually([&] { return clock.waits().size() == 1; }));
    health.failed("refused");
    health.failed("refused");  // the breaker opens: still waiting
    CHECK_FALSE(health.up());
    CHECK_FALSE(recovered.has_value());
    health.answered();
    waiter.join();
    CHECK(recovered == true);
  }
  SUBCASE("answers only: the whole time") {
    std::optional<bool> recovered;
    std::jthread waiter([&](std::stop_token stop) { recovered = health.waitForRecovery(30s, stop); });
    REQUIRE(eventually([&] { return clock.waits().size() == 1; }));
    health.answered();
    clock.advance(30s);
    waiter.join();
    CHECK(recovered == false);
  }
  SUBCASE("a failure before the wait (the one backed off from), answered during it") {
    health.failed("refused");  // one failure opens nothing, but the answer after it ends the wait
    CHECK(health.up());
    std::optional<bool> recovered;
    std::jthread waiter([&](std::stop_token stop) { recovered = health.waitForRecovery(1h, stop); });
    REQUIRE(eventually([&] { return clock.waits().size() == 1; }));
    health.answered();
    waiter.join();
    CHECK(recovered == true);
  }
}

TEST_CASE("the prober starts at the first failure of a streak and stops at the answer") {
  FakeClock clock;
  UpstreamHealth health(clock, UpstreamHealthOptions{3, 5s});
  std::atomic<int> probes{0};
  std::atomic<bool> back{false};
  health.startProber([&] {
    ++probes;
    return back.load();
  });
  health.failed("refused");
  CHECK(health.up());
  REQUIRE(eventually([&] { return clock.waits().size() == 1; }));  // probed once, waiting its interval
  CHECK(probes.load() == 1);
  back = true;
  clock.advance(5s);
  REQUIRE(eventually([&] { return probes.load() == 2; }));
  health.stop();
  CHECK(probes.load() == 2);
}

TEST_CASE("waiting ends on a stop request") {
  FakeClock clock;
  UpstreamHealth health(clock, UpstreamHealthOptions{1, 5ms});
  health.failed("refused");
  std::stop_source stop;
  stop.request_stop();
  CHECK_FALSE(health.waitUntilUp(10s, stop.get_token()));
}
