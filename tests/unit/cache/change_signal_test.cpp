#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "cache/change_signal.h"
#include "cache/thread_safe_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/unit/cache/test_objects.h"

using cache::ChangeSignal;

TEST_CASE("A ChangeSignal runs each subscription once, at the next notify") {
  ChangeSignal signal;
  int a = 0;
  int b = 0;
  auto first = signal.subscribe([&] { ++a; });
  auto second = signal.subscribe([&] { ++b; });
  signal.notify();
  CHECK(a == 1);
  CHECK(b == 1);
  signal.notify();
  CHECK(a == 1);
  CHECK(signal.waitingForTest() == 0);
}

TEST_CASE("A ChangeSignal subscription dropped before the change is never run") {
  ChangeSignal signal;
  int runs = 0;
  { auto gone = signal.subscribe([&] { ++runs; }); }
  CHECK(signal.waitingForTest() == 0);
  signal.notify();
  CHECK(runs == 0);
}

TEST_CASE("A waiter that re-checks after subscribing never misses a change made on another thread") {
  // The waiter's pattern (proxy io::awaitChange): subscribe, re-check, then wait. Over
  // many rounds with the writer racing it, every round ends woken or having seen the value.
  for (int round = 0; round < 2000; ++round) {
    ChangeSignal signal;
    std::atomic<int> value{0};
    std::atomic<bool> woken{false};
    std::thread writer([&] {
      value.store(1, std::memory_order_release);
      signal.notify();
    });
    auto subscription = signal.subscribe([&] { woken.store(true); });
    const bool seen = value.load(std::memory_order_acquire) == 1;
    writer.join();
    CHECK((seen || woken.load()));
  }
}

TEST_CASE("A store notifies its waiters after apply, replace and bookmark") {
  cache::testing::FakeClock clock;
  cache::ThreadSafeStore store(cache::StoreOptions{}, clock);
  int notified = 0;
  auto resubscribe = [&] { return store.changes().subscribe([&] { ++notified; }); };
  auto s1 = resubscribe();
  REQUIRE(store.replace({}, 5));
  CHECK(notified == 1);
  auto s2 = resubscribe();
  REQUIRE(store.apply(cache::EventType::Added, cache::testing::makePod("default", "a", 6)));
  CHECK(notified == 2);
  auto s3 = resubscribe();
  REQUIRE(store.bookmark(9));
  CHECK(notified == 3);
  CHECK(store.currentRV() == 9);
}
