// Packing the history's superseded versions (--store-encoding history, compressed; issue #20):
// watch resumes (W4, W10), deletions (W3) and Exact reads (R3, P1, P8) see exactly what
// they saw before packing.
#include <doctest/doctest.h>

#include "cache/event_history.h"
#include "cache/thread_safe_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/unit/cache/doctest_string_view.h"
#include "tests/unit/cache/test_objects.h"

namespace cache {
namespace {

using testing::FakeClock;
using testing::makePod;

std::vector<std::string> bytesOf(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    out.push_back(std::string(wireName(e.type)) + " " + std::string(testing::bytesOf(*e.object)) + " prev " +
                  (e.prev_object ? std::string(testing::bytesOf(*e.prev_object)) : "-"));
  }
  return out;
}

std::vector<HistoryEvent> stored(const EventHistory& history) {
  HistoryCursor cursor{history.evictedTotal()};
  std::vector<HistoryEvent> out;
  REQUIRE(history.read(cursor, SIZE_MAX, out).has_value());
  return out;
}

std::vector<WatchEvent> unpacked(const EventHistory& history, uint64_t after_rv) {
  auto cursor = history.cursorAfter(after_rv);
  REQUIRE(cursor.has_value());
  std::vector<HistoryEvent> stored;
  REQUIRE(history.read(*cursor, SIZE_MAX, stored).has_value());
  std::vector<WatchEvent> out;
  for (const HistoryEvent& event : stored) out.push_back(event.unpack());
  return out;
}

void pack(EventHistory& history, size_t max_jobs = SIZE_MAX) {
  PackBatch batch = history.packBatch(max_jobs);
  batch.pack();
  history.applyPacked(batch);
}

}  // namespace

TEST_CASE("Superseded versions are packed once, current ones stay plain, and read back unchanged (W3, W10)") {
  FakeClock clock;
  EventHistory history(EventHistoryOptions{}, clock);
  history.start(1);
  auto a1 = makePod("ns", "a", 2, {{"app", "web"}});
  auto a2 = makePod("ns", "a", 3, {{"app", "db"}});
  auto b1 = makePod("ns", "b", 4);
  history.append({EventType::Added, a1, nullptr, 2, {}});
  history.append({EventType::Modified, a2, a1, 3, {}});
  history.append({EventType::Added, b1, nullptr, 4, {}});
  history.append({EventType::Deleted, a2->withResourceVersion(5), a2, 5, {}});
  const auto before = bytesOf(unpacked(history, 1));
  const uint64_t json_before = history.retainedJsonBytes();
  CHECK(json_before == testing::bytesOf(*a1).size() + 2 * testing::bytesOf(*a2).size());

  pack(history);
  const auto events = stored(history);
  // a1 and a2 are superseded: both references to each point at one packed version.
  CHECK(events[0].object.packed);
  CHECK(events[0].object.packed == events[1].prev_object.packed);
  CHECK(events[1].object.packed == events[3].prev_object.packed);
  CHECK(events[3].object.packed);
  // b1 is the store's current version: packing it would only add a copy.
  CHECK(events[2].object.plain == b1);
  CHECK(history.packedVersions() == 3);
  CHECK(history.retainedJsonBytes() == 0);
  CHECK(history.packedBytes() > 0);
  CHECK(bytesOf(unpacked(history, 1)) == before);
  // Filtered watches (W10) match the unpacked labels; the key needs no unpacking.
  CHECK(lookup(events[0].object.get()->meta().labels, "app") == "web");
  CHECK(events[3].object.key() == "ns/a");

  // Nothing is offered twice.
  CHECK(history.packBatch(SIZE_MAX).jobs.empty());
}

TEST_CASE("Versions evicted between finding and swapping are skipped, and eviction returns their bytes") {
  FakeClock clock;
  EventHistory history(EventHistoryOptions{.capacity = 3}, clock);
  history.start(1);
  ObjectConstSharedPtr previous = makePod("ns", "a", 2);
  history.append({EventType::Added, previous, nullptr, 2, {}});
  for (uint64_t rv = 3; rv <= 4; ++rv) {
    auto next = makePod("ns", "a", rv);
    history.append({EventType::Modified, next, previous, rv, {}});
    previous = next;
  }
  PackBatch batch = history.packBatch(SIZE_MAX);
  CHECK(batch.jobs.size() == 2);
  batch.pack();
  // Meanwhile the writer went on: the first two events left the window.
  for (uint64_t rv = 5; rv <= 6; ++rv) {
    auto next = makePod("ns", "a", rv);
    history.append({EventType::Modified, next, previous, rv, {}});
    previous = next;
  }
  history.applyPacked(batch);
  CHECK(history.packedVersions() == 1);  // the version at 3 is still some event's prev
  pack(history);
  CHECK(history.packedVersions() == 3);  // 3, 4, 5; 6 is current
  const auto events = unpacked(history, 3);
  REQUIRE(events.size() == 3);
  CHECK(events[0].prev_object->resourceVersion() == 3);
  CHECK(events[2].object->resourceVersion() == 6);

  for (uint64_t rv = 7; rv <= 9; ++rv) {
    auto next = makePod("ns", "a", rv);
    history.append({EventType::Modified, next, previous, rv, {}});
    previous = next;
  }
  pack(history);
  for (uint64_t rv = 10; rv <= 12; ++rv) {
    auto next = makePod("ns", "a", rv);
    history.append({EventType::Modified, next, previous, rv, {}});
    previous = next;
  }
  // Every packed version left with its event; the new ones are not packed yet.
  CHECK(history.packedVersions() == 0);
  CHECK(history.packedBytes() == 0);
}

TEST_CASE("A packed store answers resumes and Exact reads as the plain one (W4, R3, P1, P8)") {
  FakeClock clock;
  ThreadSafeStore plain(StoreOptions{}, clock);
  ThreadSafeStore packed(StoreOptions{}, clock);
  for (ThreadSafeStore* store : {&plain, &packed}) {
    REQUIRE(store->replace({makePod("ns", "a", 1, {{"app", "web"}}), makePod("ns", "b", 2)}, 10).has_value());
    for (uint64_t rv = 11; rv <= 40; ++rv) {
      const std::string name = rv % 3 == 0 ? "a" : "c" + std::to_string(rv % 4);
      REQUIRE(store->apply(EventType::Modified, makePod("ns", name, rv, {{"app", "v" + std::to_string(rv)}})).has_value());
    }
    REQUIRE(store->apply(EventType::Deleted, makePod("ns", "b", 41)).has_value());
  }
  while (packed.packHistory(4) == 4) {
  }
  CHECK(packed.stats().history_packed_versions.load() > 0);
  CHECK(packed.stats().history_packed_bytes.load() > 0);
  CHECK(packed.stats().history_json_bytes.load() == 0);

  for (uint64_t rv : {10, 11, 20, 33, 40}) {
    CAPTURE(rv);
    auto at_plain = plain.snapshotAt(rv);
    auto at_packed = packed.snapshotAt(rv);
    REQUIRE(at_plain.has_value());
    REQUIRE(at_packed.has_value());
    std::vector<std::string> want, got;
    for (const auto& o : (*at_plain)->list({}).items) want.emplace_back(testing::bytesOf(*o));
    for (const auto& o : (*at_packed)->list({}).items) got.emplace_back(testing::bytesOf(*o));
    CHECK(got == want);

    std::vector<WatchEvent> plain_events, packed_events;
    auto plain_cursor = plain.watchCursor(rv);
    auto packed_cursor = packed.watchCursor(rv);
    REQUIRE(plain_cursor.has_value());
    REQUIRE(packed_cursor.has_value());
    REQUIRE(plain.readEvents(*plain_cursor, 7, plain_events).has_value());
    REQUIRE(packed.readEvents(*packed_cursor, 7, packed_events).has_value());
    CHECK(bytesOf(packed_events) == bytesOf(plain_events));
  }
}

}  // namespace cache
