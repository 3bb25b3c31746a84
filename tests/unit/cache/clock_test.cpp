// The process clock (cache/clock.h) and the tests' stepped clock (tests/fakes/fake_clock.h).
#include "cache/clock.h"

#include <atomic>
#include <optional>
#include <thread>

#include <doctest/doctest.h>

#include "tests/fakes/fake_clock.h"

namespace cache {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::FakeClock;

}  // namespace

TEST_CASE("The real clock's sleep and wait end on a stop request, not at their hour-long timeout") {
  RealClock& clock = RealClock::instance();
  std::optional<bool> slept;
  std::jthread sleeper([&](std::stop_token stop) { slept = clock.sleepFor(1h, stop); });
  sleeper.request_stop();
  sleeper.join();
  CHECK(slept == false);

  std::mutex mu;
  std::condition_variable_any cv;
  std::optional<bool> waited;
  std::jthread waiter([&](std::stop_token stop) {
    std::unique_lock lock(mu);
    waited = clock.waitFor(lock, cv, 1h, stop, [] { return false; });
  });
  waiter.request_stop();
  waiter.join();
  CHECK(waited == false);
}

TEST_CASE("The real clock's wait ends when its condition becomes true") {
  RealClock& clock = RealClock::instance();
  std::mutex mu;
  std::condition_variable_any cv;
  bool ready = false;
  std::jthread setter([&] {
    std::lock_guard lock(mu);
    ready = true;
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  CHECK(clock.waitFor(lock, cv, 1h, std::stop_token{}, [&] { return ready; }));
}

TEST_CASE("The fake clock moves only when stepped or slept on, and reports wall time from the same reading") {
  FakeClock clock;
  const auto start = clock.now();
  CHECK(clock.now() == start);
  clock.advance(5s);
  CHECK(clock.now() == start + 5s);
  CHECK(clock.sleepFor(2s, std::stop_token{}));
  CHECK(clock.now() == start + 7s);
  CHECK(clock.sleeps() == std::vector<Clock::Duration>{2s});
  CHECK(clock.wallNow().time_since_epoch() == clock.now().time_since_epoch());
}

TEST_CASE("The fake clock's wait ends when another thread steps it past the deadline") {
  FakeClock clock;
  std::mutex mu;
  std::condition_variable_any cv;
  std::atomic<bool> done{false};
  std::optional<bool> waited;
  std::jthread waiter([&] {
    std::unique_lock lock(mu);
    waited = clock.waitFor(lock, cv, 10s, std::stop_token{}, [] { return false; });
    done = true;
  });
  REQUIRE(eventually([&] { return clock.waits().size() == 1; }));
  clock.advance(9s);
  CHECK_FALSE(done.load());
  clock.advance(1s);
  waiter.join();
  CHECK(waited == false);
}

}  // namespace cache
