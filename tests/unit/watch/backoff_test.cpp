#include <doctest/doctest.h>

#include "tests/fakes/fake_clock.h"
#include "watch/reflector/backoff.h"

using namespace watch;
using cache::Clock;
using cache::testing::FakeClock;
using std::chrono::milliseconds;

namespace {
milliseconds ms(Clock::Duration d) { return std::chrono::duration_cast<milliseconds>(d); }
}  // namespace

TEST_CASE("Backoff doubles from 800 ms up to the 30 s cap (K1.6)") {
  FakeClock clock;
  BackoffOptions options;
  options.jitter = 0;
  Backoff backoff(options, clock, 1);
  const long expected[] = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
  for (long want : expected) {
    CHECK(ms(backoff.next()).count() == want);
    clock.advance(std::chrono::seconds(1));
  }
}

TEST_CASE("Backoff jitter stretches each delay by up to the jitter factor and varies") {
  FakeClock clock;
  Backoff backoff(BackoffOptions{}, clock, 42);
  long base = 800;
  bool varied = false;
  for (int i = 0; i < 8; ++i) {
    const long got = ms(backoff.next()).count();
    CHECK(got >= base);
    CHECK(got < 2 * base);
    varied = varied || got != base;
    base = std::min<long>(base * 2, 30000);
  }
  CHECK(varied);
}

TEST_CASE("Backoff differs between reflectors with different seeds") {
  FakeClock clock;
  Backoff a(BackoffOptions{}, clock, 1);
  Backoff b(BackoffOptions{}, clock, 2);
  bool differ = false;
  for (int i = 0; i < 4; ++i) differ = differ || a.next() != b.next();
  CHECK(differ);
}

TEST_CASE("Backoff starts over after 2 minutes without failures (K1.6)") {
  FakeClock clock;
  BackoffOptions options;
  options.jitter = 0;
  Backoff backoff(options, clock, 1);
  backoff.next();
  backoff.next();
  CHECK(ms(backoff.next()).count() == 3200);
  clock.advance(std::chrono::seconds(119));
  CHECK(ms(backoff.next()).count() == 6400);
  clock.advance(std::chrono::minutes(2));
  CHECK(ms(backoff.next()).count() == 800);
  backoff.next();
  backoff.reset();
  CHECK(ms(backoff.next()).count() == 800);
}
