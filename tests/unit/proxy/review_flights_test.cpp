#include "proxy/auth/review_flights.h"

#include <atomic>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

namespace asio = boost::asio;
using proxy::auth::ReviewFlights;

namespace {

struct Outcome {
  std::string value;
  bool shared = false;
  bool threw = false;
};

// A review that takes as long as `gate` stays armed: cancel it to answer.
auto gatedFetch(asio::steady_timer& gate, std::atomic<int>& fetches, std::string answer) {
  return [&gate, &fetches, answer]() -> asio::awaitable<std::string> {
    ++fetches;
    boost::system::error_code ec;
    co_await gate.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return answer;
  };
}

template <class Fetch>
asio::awaitable<void> ask(ReviewFlights<std::string>& flights, std::string key, Fetch fetch, Outcome& out) {
  try {
    out.value = co_await flights.run(key, fetch, std::string("unanswered"), out.shared);
  } catch (const std::exception&) {
    out.threw = true;
  }
}

}  // namespace

TEST_CASE("Identical reviews that arrive while one is in flight share its answer") {
  asio::io_context io;
  ReviewFlights<std::string> flights;
  asio::steady_timer gate(io, std::chrono::steady_clock::time_point::max());
  std::atomic<int> fetches{0};
  std::vector<Outcome> same(4);
  Outcome other;
  for (auto& out : same) asio::co_spawn(io, ask(flights, "alice", gatedFetch(gate, fetches, "allowed"), out), asio::detached);
  asio::co_spawn(io, ask(flights, "bob", gatedFetch(gate, fetches, "denied"), other), asio::detached);
  io.poll();  // everyone is now waiting: two reviews in flight, three callers parked
  CHECK(fetches == 2);
  CHECK(flights.inFlight() == 2);

  gate.cancel();
  io.run();
  int shared = 0;
  for (const auto& out : same) {
    CHECK(out.value == "allowed");
    shared += out.shared ? 1 : 0;
  }
  CHECK(shared == 3);
  CHECK(other.value == "denied");
  CHECK_FALSE(other.shared);
  CHECK(flights.inFlight() == 0);

  SUBCASE("a review after the answer landed flies again (the decision cache, not the flight, remembers)") {
    io.restart();
    asio::steady_timer open(io, std::chrono::steady_clock::time_point::min());
    Outcome again;
    asio::co_spawn(io, ask(flights, "alice", gatedFetch(open, fetches, "allowed"), again), asio::detached);
    io.run();
    CHECK(fetches == 3);
    CHECK(again.value == "allowed");
    CHECK_FALSE(again.shared);
  }
}

TEST_CASE("Waiters on another io thread are woken on their own thread") {
  asio::io_context a;
  asio::io_context b;
  auto guard_a = asio::make_work_guard(a);
  auto guard_b = asio::make_work_guard(b);
  std::thread thread_a([&] { a.run(); });
  std::thread thread_b([&] { b.run(); });

  ReviewFlights<std::string> flights;
  asio::steady_timer gate(a, std::chrono::steady_clock::time_point::max());
  std::atomic<int> fetches{0};
  Outcome first;
  std::vector<Outcome> waiters(8);
  asio::post(a, [&] {
    asio::co_spawn(a, ask(flights, "token", gatedFetch(gate, fetches, "alice"), first), asio::detached);
  });
  // co_spawn only schedules the coroutine: wait until the leader's flight is registered
  // (a slow sanitizer build once let a waiter on b get there first and lead instead).
  while (flights.inFlight() == 0) std::this_thread::yield();
  std::promise<void> all_done;
  std::atomic<int> done{0};
  asio::post(b, [&] {
    for (auto& out : waiters) {
      asio::co_spawn(b, ask(flights, "token", gatedFetch(gate, fetches, "never asked"), out), [&](std::exception_ptr) {
        if (++done == static_cast<int>(waiters.size())) all_done.set_value();
      });
    }
    // Runs after every waiter above has parked (b runs handlers in order): answer now.
    asio::post(b, [&] { asio::post(a, [&] { gate.cancel(); }); });
  });
  all_done.get_future().wait();
  guard_a.reset();
  guard_b.reset();
  thread_a.join();
  thread_b.join();

  CHECK(fetches == 1);
  CHECK(first.value == "alice");
  CHECK_FALSE(first.shared);
  for (const auto& out : waiters) {
    CHECK(out.value == "alice");
    CHECK(out.shared);
  }
  CHECK(flights.inFlight() == 0);
}

TEST_CASE("A review that throws gives its waiters the unanswered value, and only the asker sees the error") {
  asio::io_context io;
  ReviewFlights<std::string> flights;
  asio::steady_timer gate(io, std::chrono::steady_clock::time_point::max());
  auto failing = [&gate]() -> asio::awaitable<std::string> {
    boost::system::error_code ec;
    co_await gate.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    throw std::runtime_error("upstream gone");
  };
  Outcome asker;
  Outcome waiter;
  asio::co_spawn(io, ask(flights, "k", failing, asker), asio::detached);
  asio::co_spawn(io, ask(flights, "k", failing, waiter), asio::detached);
  io.poll();
  gate.cancel();
  io.run();
  CHECK(asker.threw);
  CHECK_FALSE(waiter.threw);
  CHECK(waiter.value == "unanswered");
  CHECK(flights.inFlight() == 0);
}
