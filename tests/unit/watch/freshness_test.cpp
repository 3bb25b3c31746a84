#include "watch/freshness.h"

#include <doctest/doctest.h>

#include "tests/fakes/fake_clock.h"

namespace watch {

using cache::testing::FakeClock;

TEST_CASE("A state proof holds only while the store is still at the proven state") {
  FakeClock clock;
  FreshnessProofs proofs(clock);
  CHECK(proofs.provenAt("default", 40) == 0);
  proofs.record("default", Freshness{900, 40});
  CHECK(proofs.provenAt("default", 40) == 900);
  CHECK(proofs.provenAt("default", 41) == 0);  // the store moved: no longer proven
  CHECK(proofs.provenAt("other", 40) == 0);    // another namespace is not covered
  // A whole-resource proof covers every namespace.
  proofs.record("", Freshness{950, 40});
  CHECK(proofs.provenAt("other", 40) == 950);
  CHECK(proofs.provenAt("default", 40) == 950);
  // An older proof of the same state does not replace a newer one.
  proofs.record("default", Freshness{800, 40});
  proofs.record("", Freshness{800, 40});
  CHECK(proofs.provenAt("default", 40) == 950);
}

TEST_CASE("A store that has not moved for the quiet period is idle") {
  FakeClock clock;
  FreshnessProofs proofs(clock);
  CHECK(proofs.quietFor(10, std::chrono::hours(1)));  // first look: nothing says it is busy
  CHECK(proofs.quietFor(10, std::chrono::hours(1)));
  CHECK_FALSE(proofs.quietFor(11, std::chrono::hours(1)));  // it just moved
  clock.advance(std::chrono::minutes(59));
  CHECK_FALSE(proofs.quietFor(11, std::chrono::hours(1)));
  clock.advance(std::chrono::minutes(1));
  CHECK(proofs.quietFor(11, std::chrono::hours(1)));
}

TEST_CASE("A probe that found the cache current is dated by the clock") {
  FakeClock clock;
  FreshnessProofs proofs(clock);
  CHECK(proofs.lastProven() == cache::Clock::TimePoint{});
  proofs.noteProven();
  CHECK(proofs.lastProven() == clock.now());
  clock.advance(std::chrono::seconds(5));
  CHECK(clock.now() - proofs.lastProven() == std::chrono::seconds(5));
}

TEST_CASE("Consistent reads share a probe only if it left after they arrived") {
  FakeClock clock;
  ProbeFlights flights(clock);
  const auto t0 = clock.now();
  auto first = flights.join("ns", t0);
  REQUIRE(first.flight);
  CHECK(first.leader);
  // Before it leaves anyone may board.
  clock.advance(std::chrono::milliseconds(1));
  auto early = flights.join("ns", clock.now());
  CHECK(early.flight == first.flight);
  CHECK_FALSE(early.leader);
  flights.issue(first.flight);
  CHECK(first.flight->issuedAt() == clock.now());
  // A consistent read arriving after it left must wait for the next one...
  clock.advance(std::chrono::milliseconds(1));
  auto late = flights.join("ns", clock.now());
  CHECK_FALSE(late.flight);
  CHECK(flights.current("ns") == first.flight);
  // ...while a read at RV=N may use it.
  auto any = flights.join("ns", std::nullopt);
  CHECK(any.flight == first.flight);
  // Another scope flies on its own.
  CHECK(flights.join("other", clock.now()).leader);
  flights.land("ns", first.flight, Freshness{900, 40});
  CHECK(first.flight->landed());
  REQUIRE(first.flight->result());
  CHECK(first.flight->result()->revision == 900);
  // Landed: the next read leads a new probe.
  auto next = flights.join("ns", clock.now());
  CHECK(next.leader);
  CHECK(next.flight != first.flight);
}

TEST_CASE("Proofs of client-named namespaces stay bounded") {
  FakeClock clock;
  FreshnessProofs proofs(clock);
  for (int i = 0; i < 3 * static_cast<int>(kMaxScopes); ++i) {
    proofs.record("ns-" + std::to_string(i), Freshness{100, 10});
  }
  // The newest is kept (older ones may have been dropped: a proof is only a shortcut).
  CHECK(proofs.provenAt("ns-" + std::to_string(3 * kMaxScopes - 1), 10) == 100);
}

TEST_CASE("Waiters on a probe are woken when it lands, once") {
  FakeClock clock;
  ProbeFlights flights(clock);
  auto seat = flights.join("ns", clock.now());
  flights.issue(seat.flight);
  int woken = 0;
  auto subscription = seat.flight->landing().subscribe([&] { ++woken; });
  CHECK(woken == 0);
  flights.land("ns", seat.flight, Freshness{7, 0});
  CHECK(woken == 1);
  CHECK(seat.flight->landed());
  flights.land("ns", seat.flight, Freshness{7, 0});  // the subscription was used up
  CHECK(woken == 1);
}

}  // namespace watch
