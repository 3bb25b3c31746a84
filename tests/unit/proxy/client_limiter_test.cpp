#include "proxy/server/client_limiter.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

using proxy::ClientLimiter;

TEST_CASE("A client gets at most max-per-client watches; others are unaffected") {
  ClientLimiter limiter(2, 0);
  auto a1 = limiter.tryAcquire("10.0.0.1");
  auto a2 = limiter.tryAcquire("10.0.0.1");
  CHECK(a1);
  CHECK(a2);
  CHECK_FALSE(limiter.tryAcquire("10.0.0.1"));
  CHECK(limiter.tryAcquire("10.0.0.2"));
  CHECK(limiter.openFor("10.0.0.1") == 2);
}

TEST_CASE("An ended watch frees its slot") {
  ClientLimiter limiter(1, 0);
  {
    auto held = limiter.tryAcquire("jane");
    CHECK(held);
    CHECK_FALSE(limiter.tryAcquire("jane"));
  }
  CHECK(limiter.open() == 0);
  CHECK(limiter.tryAcquire("jane"));
}

TEST_CASE("The total bound counts every client") {
  ClientLimiter limiter(0, 2);
  auto a = limiter.tryAcquire("a");
  auto b = limiter.tryAcquire("b");
  CHECK_FALSE(limiter.tryAcquire("c"));
  b.release();
  CHECK(limiter.tryAcquire("c"));
}

TEST_CASE("Zero bounds mean unlimited") {
  ClientLimiter limiter(0, 0);
  CHECK_FALSE(limiter.limited());
  std::vector<ClientLimiter::Slot> slots;
  for (int i = 0; i < 1000; ++i) slots.push_back(limiter.tryAcquire("one"));
  CHECK(limiter.open() == 1000);
}

TEST_CASE("A moved slot releases once") {
  ClientLimiter limiter(1, 0);
  auto a = limiter.tryAcquire("x");
  ClientLimiter::Slot b = std::move(a);
  CHECK_FALSE(a);
  a = std::move(b);
  CHECK(limiter.open() == 1);
  a.release();
  a.release();
  CHECK(limiter.open() == 0);
}

TEST_CASE("Io threads acquiring and releasing at once never exceed the bound") {
  ClientLimiter limiter(3, 0);
  std::atomic<int> held{0};
  std::atomic<int> peak{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        auto slot = limiter.tryAcquire("shared");
        if (!slot) continue;
        const int now = ++held;
        int seen = peak.load();
        while (now > seen && !peak.compare_exchange_weak(seen, now)) {
        }
        --held;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(peak.load() <= 3);
  CHECK(limiter.open() == 0);
}

TEST_CASE("Without a per-client bound only the total counts, whatever the key") {
  ClientLimiter limiter(0, 2);
  auto a = limiter.tryAcquire("10.0.0.1");
  auto b = limiter.tryAcquire("");
  CHECK(a);
  CHECK(b);
  CHECK_FALSE(limiter.tryAcquire("10.0.0.2"));
  CHECK(limiter.openFor("10.0.0.1") == 0);  // no per-client counts kept
  b.release();
  CHECK(limiter.open() == 1);
  CHECK(limiter.tryAcquire("10.0.0.2"));
}
