#include "cache/event_history.h"

#include <doctest/doctest.h>

#include "tests/unit/cache/doctest_string_view.h"
#include "tests/fakes/fake_clock.h"
#include "tests/unit/cache/test_objects.h"

namespace cache {
namespace {

using testing::FakeClock;
using testing::makePod;

WatchEvent added(uint64_t rv) { return WatchEvent{EventType::Added, makePod("ns", "p" + std::to_string(rv), rv), nullptr, rv, {}}; }

}  // namespace

TEST_CASE("History keeps at most `capacity` events and reports the W5 number once it wrapped") {
  FakeClock clock;
  EventHistory history(EventHistoryOptions{.capacity = 3, .max_age = std::chrono::seconds(150)}, clock);
  history.start(10);
  CHECK(history.oldestResumableRV() == 10);
  for (uint64_t rv = 11; rv <= 15; ++rv) history.append(added(rv));
  CHECK(history.size() == 3);
  CHECK(history.evictedTotal() == 2);
  // Oldest buffered event is 13: resumable from 12 (W5: "oldest buffered event RV minus 1").
  CHECK(history.oldestResumableRV() == 12);
  auto too_old = history.cursorAfter(11);
  REQUIRE_FALSE(too_old.has_value());
  CHECK(too_old.error().reason == Reason::Expired);
  CHECK(too_old.error().message == "too old resource version: 11 (12)");

  auto cursor = history.cursorAfter(12);
  REQUIRE(cursor.has_value());
  std::vector<HistoryEvent> out;
  REQUIRE(history.read(*cursor, 2, out).has_value());
  REQUIRE(out.size() == 2);
  CHECK(out[0].resource_version == 13);
  CHECK(out[1].resource_version == 14);
  REQUIRE(history.read(*cursor, 10, out).has_value());
  CHECK(out.size() == 3);
  CHECK(out[2].resource_version == 15);
}

TEST_CASE("Before any eviction a watch can resume from the list RV (W4)") {
  FakeClock clock;
  EventHistory history(EventHistoryOptions{}, clock);
  history.start(100);
  history.append(added(105));
  CHECK(history.cursorAfter(100).has_value());
  CHECK_FALSE(history.cursorAfter(99).has_value());
  auto cursor = history.cursorAfter(105);
  REQUIRE(cursor.has_value());
  std::vector<HistoryEvent> out;
  REQUIRE(history.read(*cursor, 10, out).has_value());
  CHECK(out.empty());
}

TEST_CASE("History drops events older than max_age, measured on the injected clock") {
  FakeClock clock;
  EventHistory history(EventHistoryOptions{.capacity = 100, .max_age = std::chrono::seconds(150)}, clock);
  history.start(1);
  history.append(added(2));
  clock.advance(std::chrono::seconds(100));
  history.append(added(3));
  clock.advance(std::chrono::seconds(51));
  CHECK(history.evictExpired() == 1);
  CHECK(history.size() == 1);
  CHECK(history.oldestResumableRV() == 2);
  clock.advance(std::chrono::seconds(100));
  history.append(added(4));  // evicts event 3 on the way in
  CHECK(history.size() == 1);
  CHECK(history.oldestResumableRV() == 3);
  clock.advance(std::chrono::seconds(151));
  CHECK(history.evictExpired() == 1);
  CHECK(history.size() == 0);
  // Nothing buffered: resumable from the last evicted event.
  CHECK(history.oldestResumableRV() == 4);
  CHECK(history.cursorAfter(4).has_value());
}

TEST_CASE("A cursor into events evicted meanwhile fails instead of skipping them") {
  FakeClock clock;
  EventHistory history(EventHistoryOptions{.capacity = 2}, clock);
  history.start(0);
  history.append(added(1));
  auto cursor = history.cursorAfter(0);
  REQUIRE(cursor.has_value());
  history.append(added(2));
  history.append(added(3));
  std::vector<HistoryEvent> out;
  auto result = history.read(*cursor, 10, out);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().reason == Reason::Expired);
  CHECK(out.empty());
}

TEST_CASE("History counts the JSON bytes only it keeps alive") {
  FakeClock clock;
  EventHistory history(EventHistoryOptions{.capacity = 1}, clock);
  auto v1 = makePod("ns", "a", 1);
  auto v2 = makePod("ns", "a", 2);
  history.append(WatchEvent{EventType::Modified, v2, v1, 2, {}});
  CHECK(history.retainedJsonBytes() == v1->plainBytes().size());
  history.append(WatchEvent{EventType::Deleted, v2->withResourceVersion(3), v2, 3, {}});
  CHECK(history.retainedJsonBytes() == 2 * v2->plainBytes().size());
}

}  // namespace cache
