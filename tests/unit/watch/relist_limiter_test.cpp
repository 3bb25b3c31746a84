#include <doctest/doctest.h>

#include "tests/fakes/fake_clock.h"
#include "watch/reflector/relist_limiter.h"

using namespace watch;
using cache::Clock;
using cache::testing::FakeClock;

TEST_CASE("Token bucket lets a burst through and spreads the rest one slot apart") {
  FakeClock clock;
  TokenBucketRelistLimiter limiter(clock, /*per_second=*/2.0, /*burst=*/2.0);
  std::stop_source source;
  for (int i = 0; i < 2; ++i) CHECK(limiter.acquire(source.get_token()));
  CHECK(clock.sleeps().empty());
  CHECK(limiter.acquire(source.get_token()));
  REQUIRE(clock.sleeps().size() == 1);
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(clock.sleeps()[0]).count() == 500);
}

TEST_CASE("Token bucket waiters reserve increasing slots instead of waking together") {
  FakeClock clock;
  // Simulate three reflectors asking at the same instant: time does not move between
  // their reservations, so each must get a later slot than the one before.
  struct FrozenClock final : Clock {
    explicit FrozenClock(FakeClock& c) : inner(c) {}
    TimePoint now() const override { return inner.now(); }
    WallTime wallNow() const override { return inner.wallNow(); }
    bool sleepFor(Duration d, std::stop_token) override {
      waits.push_back(d);
      return true;
    }
    bool waitFor(std::unique_lock<std::mutex>&, std::condition_variable_any&, Duration, std::stop_token,
                 const std::function<bool()>& ready) override {
      return ready();
    }
    FakeClock& inner;
    std::vector<Duration> waits;
  } frozen(clock);
  TokenBucketRelistLimiter spread(frozen, 1.0, 1.0);
  std::stop_source source;
  for (int i = 0; i < 4; ++i) CHECK(spread.acquire(source.get_token()));
  REQUIRE(frozen.waits.size() == 3);
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(frozen.waits[0]).count() == 1000);
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(frozen.waits[1]).count() == 2000);
  CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(frozen.waits[2]).count() == 3000);
}

TEST_CASE("A stopped reflector does not get a relist slot") {
  FakeClock clock;
  TokenBucketRelistLimiter limiter(clock, 1.0, 1.0);
  std::stop_source source;
  source.request_stop();
  CHECK_FALSE(limiter.acquire(source.get_token()));
  UnlimitedRelistLimiter unlimited;
  CHECK_FALSE(unlimited.acquire(source.get_token()));
}
