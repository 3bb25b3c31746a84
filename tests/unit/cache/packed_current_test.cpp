// Packing current objects (--store-encoding compressed, issue #20): GET, LIST, selectors,
// indexes, watch resumes (W3, W4) and Exact reads (R3) see exactly what a plain store shows.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cache/thread_safe_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/unit/cache/doctest_string_view.h"
#include "tests/unit/cache/test_objects.h"

namespace cache {
namespace {

using testing::FakeClock;
using testing::makePod;

std::vector<std::string> listed(const ThreadSafeStore& store) {
  std::vector<std::string> out;
  for (const auto& o : store.snapshot()->list({}).items) out.emplace_back(testing::bytesOf(*o));
  return out;
}

// The state at `rv` exactly (R3), as listed.
std::vector<std::string> listedAt(const ThreadSafeStore& store, uint64_t rv) {
  auto snapshot = store.snapshotAt(rv);
  REQUIRE(snapshot.has_value());
  std::vector<std::string> out;
  for (const auto& o : (*snapshot)->list({}).items) out.emplace_back(testing::bytesOf(*o));
  return out;
}

std::vector<std::string> eventsAfter(const ThreadSafeStore& store, uint64_t rv) {
  auto cursor = store.watchCursor(rv);
  REQUIRE(cursor.has_value());
  std::vector<WatchEvent> events;
  REQUIRE(store.readEvents(*cursor, SIZE_MAX, events).has_value());
  std::vector<std::string> out;
  for (const auto& e : events) {
    out.push_back(std::string(wireName(e.type)) + " " + std::string(testing::bytesOf(*e.object)) + " prev " +
                  (e.prev_object ? std::string(testing::bytesOf(*e.prev_object)) : "-"));
  }
  return out;
}

size_t packAll(ThreadSafeStore& store) {
  size_t found = 0;
  for (size_t n; (n = store.packCurrent(3)) > 0 && found < 1000;) found += n;
  return found;
}

}  // namespace

TEST_CASE("Current objects no event holds are packed, and read the same as plain ones") {
  FakeClock clock;
  ThreadSafeStore plain(StoreOptions{}, clock);
  ThreadSafeStore packed(StoreOptions{}, clock);
  std::vector<ObjectConstSharedPtr> pods;
  for (int i = 0; i < 10; ++i) {
    pods.push_back(makePod("ns" + std::to_string(i % 2), "p" + std::to_string(i), 1 + i, {{"app", i % 3 ? "web" : "db"}},
                           "node-" + std::to_string(i % 4)));
  }
  for (ThreadSafeStore* store : {&plain, &packed}) REQUIRE(store->replace(pods, 20).has_value());
  // The first list adds no history events: every object can be packed.
  CHECK(packAll(packed) == 10);
  CHECK(packed.stats().packed_objects.load() == 10);
  CHECK(packed.stats().packed_bytes.load() > 0);
  CHECK(packed.stats().json_bytes.load() == plain.stats().json_bytes.load());
  CHECK(packed.get("ns0/p0")->isPacked());
  // Indexes and selectors read metadata only: they answer from packed objects.
  CHECK(packed.byIndex(indexes::kNamespace, "ns1").size() == 5);
  for (const auto& o : packed.byIndex(indexes::kNamespace, "ns1")) CHECK(o->isPacked());
  CHECK(testing::bytesOf(*packed.get("ns1/p3")) == plain.get("ns1/p3")->plainBytes());
  CHECK(listed(packed) == listed(plain));

  // Reads unpack into their own buffers (issue #37): the instances the store shares stay
  // packed, so the packer has nothing to take back after a LIST.
  auto held = packed.get("ns1/p3");
  CHECK(held->isPacked());
  CHECK(packed.get("ns1/p3") == held);
  CHECK(testing::bytesOf(*held) == plain.get("ns1/p3")->plainBytes());
  CHECK(packed.stats().packed_objects.load() == 10);
  CHECK(packAll(packed) == 0);  // nothing left to do
}

TEST_CASE("A changed object stays plain while its event is in the history; resumes and Exact reads match (W3, W4, R3)") {
  FakeClock clock;
  ThreadSafeStore plain(StoreOptions{}, clock);
  ThreadSafeStore packed(StoreOptions{}, clock);
  for (ThreadSafeStore* store : {&plain, &packed}) {
    REQUIRE(store->replace({makePod("ns", "a", 1, {{"app", "web"}}), makePod("ns", "b", 2), makePod("ns", "c", 3)}, 10)
                .has_value());
  }
  CHECK(packAll(packed) == 3);
  for (ThreadSafeStore* store : {&plain, &packed}) {
    // MODIFIED and DELETED of packed objects: prev_object is the packed instance (W3).
    REQUIRE(store->apply(EventType::Modified, makePod("ns", "a", 11, {{"app", "db"}})).has_value());
    REQUIRE(store->apply(EventType::Deleted, makePod("ns", "b", 12)).has_value());
    REQUIRE(store->apply(EventType::Added, makePod("ns", "d", 13)).has_value());
  }
  // a and d are held by their events: packing them would free nothing.
  CHECK(packAll(packed) == 0);
  CHECK_FALSE(packed.get("ns/a")->isPacked());
  CHECK(packed.get("ns/c")->isPacked());
  CHECK(packed.stats().packed_objects.load() == 1);
  CHECK(listed(packed) == listed(plain));
  for (uint64_t rv : {10, 11, 12}) {
    CAPTURE(rv);
    CHECK(eventsAfter(packed, rv) == eventsAfter(plain, rv));
    CHECK(listedAt(packed, rv) == listedAt(plain, rv));
  }
  // A relist replaces packed objects with the list's plain ones.
  REQUIRE(packed.replace({makePod("ns", "c", 3), makePod("ns", "e", 14)}, 20).has_value());
  CHECK(packed.stats().packed_objects.load() == 0);  // the list's objects, plain until the next pass
  CHECK(testing::bytesOf(*packed.get("ns/c")) == plain.get("ns/c")->plainBytes());
  CHECK(testing::bytesOf(*packed.get("ns/e")) == makePod("ns", "e", 14)->plainBytes());
}

}  // namespace cache
