// Per-flow shares of request seats (issue 34, "per-flow shares"): one flow that holds its
// seats for long never pushes another out, idle seats are lent, a seat given back goes to
// the waiting flow that holds the fewest.
#include "proxy/server/flow_limiter.h"

#include <doctest/doctest.h>

#include <vector>

using proxy::FlowBounds;
using proxy::FlowLimiter;

namespace {

std::vector<FlowLimiter::Seat> takeAll(FlowLimiter& limiter, const std::string& flow) {
  std::vector<FlowLimiter::Seat> seats;
  while (auto seat = limiter.tryAcquire(flow)) seats.push_back(std::move(seat));
  return seats;
}

}  // namespace

TEST_CASE("one flow alone borrows idle seats down to the reserve, and a newcomer still finds a seat") {
  FlowLimiter limiter(FlowBounds{.seats = 8, .reserve = 2});
  auto attacker = takeAll(limiter, "attacker");
  CHECK(attacker.size() == 6);
  auto bystander = limiter.tryAcquire("bystander");
  CHECK(bystander);
  CHECK(limiter.heldBy("bystander") == 1);
}

TEST_CASE("a flow under its fair share takes the reserve; over it, it does not") {
  FlowLimiter limiter(FlowBounds{.seats = 8, .reserve = 2});
  auto attacker = takeAll(limiter, "attacker");
  // Two flows: a share of 4 each; the bystander takes both reserve seats (under its share).
  auto bystander = takeAll(limiter, "bystander");
  CHECK(bystander.size() == 2);
  CHECK(limiter.held() == 8);
  CHECK_FALSE(limiter.tryAcquire("third"));
}

TEST_CASE("per_flow caps a flow whatever is idle") {
  FlowLimiter limiter(FlowBounds{.seats = 100, .reserve = 0, .per_flow = 3});
  CHECK(takeAll(limiter, "a").size() == 3);
}

TEST_CASE("a seat given back goes to the waiting flow holding the fewest seats") {
  FlowLimiter limiter(FlowBounds{.seats = 4, .reserve = 1, .queue_per_flow = 4});
  auto a = takeAll(limiter, "a");  // 3 (down to the reserve)
  auto b = takeAll(limiter, "b");  // the reserve seat: b is under its share
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 1);
  int a_granted = 0, c_granted = 0;
  FlowLimiter::Seat none;
  FlowLimiter::Ticket a_ticket = limiter.acquireOrQueue("a", none, [&] { ++a_granted; });
  FlowLimiter::Ticket c_ticket = limiter.acquireOrQueue("c", none, [&] { ++c_granted; });
  REQUIRE(a_ticket);
  REQUIRE(c_ticket);
  CHECK(limiter.waiting() == 2);
  a.pop_back();  // a gives one back: c, holding none, gets it although a waited first
  CHECK(c_granted == 1);
  CHECK(a_granted == 0);
  FlowLimiter::Seat c_seat = c_ticket.take();
  CHECK(c_seat);
  CHECK(limiter.heldBy("c") == 1);
}

TEST_CASE("a ticket that leaves the queue frees its place; one granted and dropped passes its seat on") {
  FlowLimiter limiter(FlowBounds{.seats = 2, .reserve = 0, .queue_per_flow = 1});
  auto a = takeAll(limiter, "a");
  REQUIRE(a.size() == 2);
  FlowLimiter::Seat none;
  int granted = 0;
  {
    FlowLimiter::Ticket gone = limiter.acquireOrQueue("b", none, [&] { ++granted; });
    REQUIRE(gone);
    CHECK(limiter.waiting() == 1);
    // The queue holds one ticket per flow here: a second is refused at once.
    FlowLimiter::Ticket refused = limiter.acquireOrQueue("b", none, [] {});
    CHECK_FALSE(refused);
    CHECK_FALSE(none);
  }
  CHECK(limiter.waiting() == 0);
  FlowLimiter::Ticket first = limiter.acquireOrQueue("b", none, [&] { ++granted; });
  int c_granted = 0;
  FlowLimiter::Ticket second = limiter.acquireOrQueue("c", none, [&] { ++c_granted; });
  a.pop_back();
  CHECK(granted == 1);  // b and c hold none: the longest waiting first
  first = FlowLimiter::Ticket();  // granted, never taken: the seat goes to c
  CHECK(c_granted == 1);
  FlowLimiter::Seat c_seat = second.take();
  CHECK(c_seat);
  CHECK(limiter.held() == 2);
}

TEST_CASE("a flow that may not wait is refused at once") {
  FlowLimiter limiter(FlowBounds{.seats = 1});
  auto held = limiter.tryAcquire("a");
  FlowLimiter::Seat seat;
  CHECK_FALSE(limiter.acquireOrQueue("b", seat, [] {}));
  CHECK_FALSE(seat);
}

TEST_CASE("unlimited: every request gets a seat and nothing is counted") {
  FlowLimiter limiter(FlowBounds{});
  auto seats = std::vector<FlowLimiter::Seat>();
  for (int i = 0; i < 100; ++i) seats.push_back(limiter.tryAcquire("a"));
  CHECK(seats.back());
  CHECK(limiter.held() == 0);
}
