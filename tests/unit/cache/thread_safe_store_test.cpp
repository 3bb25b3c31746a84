#include "cache/thread_safe_store.h"

#include <thread>

#include <doctest/doctest.h>

#include "tests/unit/cache/doctest_string_view.h"
#include "tests/fakes/fake_clock.h"
#include "tests/unit/cache/test_objects.h"

namespace cache {
namespace {

using testing::FakeClock;
using testing::makePod;

StoreOptions podStoreOptions() {
  StoreOptions options;
  options.indexes = {indexes::byNamespace(), indexes::byLabels(), indexes::byField("spec.nodeName")};
  return options;
}

std::vector<std::string> keysOf(const std::vector<ObjectConstSharedPtr>& objects) {
  std::vector<std::string> keys;
  for (const auto& o : objects) keys.push_back(o->key());
  return keys;
}

}  // namespace

TEST_CASE("Events are applied in order exactly once and carry the previous object (W3, W10)") {
  FakeClock clock;
  ThreadSafeStore store(podStoreOptions(), clock);
  REQUIRE(store.replace({}, 10).has_value());
  CHECK(store.hasSynced());

  auto added = store.apply(EventType::Added, makePod("ns", "a", 11, {{"app", "web"}}));
  REQUIRE(added.has_value());
  CHECK(added->prev_object == nullptr);
  CHECK(store.currentRV() == 11);

  auto modified = store.apply(EventType::Modified, makePod("ns", "a", 12, {{"app", "db"}}));
  REQUIRE(modified.has_value());
  REQUIRE(modified->prev_object != nullptr);
  CHECK(modified->prev_object->resourceVersion() == 11);
  CHECK(store.get("ns/a")->resourceVersion() == 12);

  auto deleted = store.apply(EventType::Deleted, makePod("ns", "a", 13, {{"app", "db"}}));
  REQUIRE(deleted.has_value());
  CHECK(deleted->prev_object->resourceVersion() == 12);
  CHECK(deleted->object->resourceVersion() == 13);
  CHECK(store.get("ns/a") == nullptr);
  CHECK(store.stats().objects == 0);
  CHECK(store.stats().json_bytes == 0);

  std::vector<WatchEvent> events;
  auto cursor = store.watchCursor(10);
  REQUIRE(cursor.has_value());
  REQUIRE(store.readEvents(*cursor, 100, events).has_value());
  REQUIRE(events.size() == 3);
  CHECK(events[0].type == EventType::Added);
  CHECK(events[2].type == EventType::Deleted);
}

TEST_CASE("An RV that does not move forward is an error and leaves the store unchanged") {
  FakeClock clock;
  ThreadSafeStore store(podStoreOptions(), clock);
  REQUIRE(store.replace({makePod("ns", "a", 5)}, 20).has_value());
  REQUIRE(store.apply(EventType::Modified, makePod("ns", "a", 21)).has_value());

  auto stale = store.apply(EventType::Modified, makePod("ns", "a", 19));
  REQUIRE_FALSE(stale.has_value());
  CHECK(stale.error().message.find("19") != std::string::npos);
  auto duplicate = store.apply(EventType::Added, makePod("ns", "b", 21));
  CHECK_FALSE(duplicate.has_value());
  CHECK_FALSE(store.bookmark(20).has_value());
  CHECK_FALSE(store.replace({}, 7).has_value());
  CHECK(store.get("ns/a")->resourceVersion() == 21);
  CHECK(store.get("ns/b") == nullptr);
  CHECK(store.currentRV() == 21);
}

TEST_CASE("Bookmarks advance the RV without events") {
  FakeClock clock;
  ThreadSafeStore store(podStoreOptions(), clock);
  REQUIRE(store.replace({makePod("ns", "a", 5)}, 20).has_value());
  REQUIRE(store.bookmark(30).has_value());
  REQUIRE(store.bookmark(30).has_value());
  CHECK(store.currentRV() == 30);
  auto cursor = store.watchCursor(20);
  REQUIRE(cursor.has_value());
  std::vector<WatchEvent> events;
  REQUIRE(store.readEvents(*cursor, 10, events).has_value());
  CHECK(events.empty());
  auto snapshot = store.snapshotAt(30);
  REQUIRE(snapshot.has_value());
  CHECK((*snapshot)->size() == 1);
}

TEST_CASE("A relist that changed the state restarts the history at its RV: older resumes are 410 (W5)") {
  FakeClock clock;
  ThreadSafeStore store(podStoreOptions(), clock);
  auto first = store.replace({makePod("ns", "keep", 3), makePod("ns", "change", 4), makePod("ns", "gone", 5)}, 10);
  REQUIRE(first.has_value());
  CHECK_FALSE(first->changed());  // the first list is the starting state, not a change
  REQUIRE(store.apply(EventType::Modified, makePod("ns", "keep", 12)).has_value());
  auto at11 = store.snapshotAt(11);  // built from the history before the relist
  REQUIRE(at11.has_value());

  // Upstream moved on while our watch was broken: "gone" was deleted and "new" created at
  // RVs we never saw, so no event can carry them; the history starts again at 50.
  auto relist = store.replace({makePod("ns", "new", 40), makePod("ns", "change", 30), makePod("ns", "keep", 12)}, 50);
  REQUIRE(relist.has_value());
  CHECK(relist->added == 1);
  CHECK(relist->modified == 1);
  CHECK(relist->deleted == 1);
  CHECK(relist->changed());
  CHECK(store.oldestResumableRV() == 50);
  for (uint64_t before : {10, 12, 49}) {
    auto cursor = store.watchCursor(before);
    REQUIRE_FALSE(cursor.has_value());
    CHECK(cursor.error().reason == Reason::Expired);
    CHECK(cursor.error().message == "too old resource version: " + std::to_string(before) + " (50)");
  }
  auto from50 = store.watchCursor(50);
  REQUIRE(from50.has_value());
  std::vector<WatchEvent> events;
  REQUIRE(store.readEvents(*from50, 10, events).has_value());
  CHECK(events.empty());
  CHECK(keysOf(store.snapshot()->list({}).items) == std::vector<std::string>{"ns/change", "ns/keep", "ns/new"});
  // Exact reads: the state at 11 stays what it was; between the old RV and the list, no
  // state is known (the apiserver answers those).
  auto again11 = store.snapshotAt(11);
  REQUIRE(again11.has_value());
  CHECK(again11->get() == at11->get());
  CHECK_FALSE(store.snapshotAt(20).has_value());
  CHECK(store.snapshotAt(50).has_value());

  // Events after the list resume as always.
  REQUIRE(store.apply(EventType::Deleted, makePod("ns", "new", 51)).has_value());
  auto cursor = store.watchCursor(50);
  REQUIRE(cursor.has_value());
  REQUIRE(store.readEvents(*cursor, 10, events).has_value());
  REQUIRE(events.size() == 1);
  CHECK(events[0].resource_version == 51);
}

TEST_CASE("A relist that finds the state unchanged keeps the history: resumes across it miss nothing") {
  FakeClock clock;
  ThreadSafeStore store(podStoreOptions(), clock);
  REQUIRE(store.replace({makePod("ns", "a", 3)}, 10).has_value());
  REQUIRE(store.apply(EventType::Added, makePod("ns", "b", 11)).has_value());
  auto relist = store.replace({makePod("ns", "a", 3), makePod("ns", "b", 11)}, 30);
  REQUIRE(relist.has_value());
  CHECK_FALSE(relist->changed());
  CHECK(store.currentRV() == 30);
  CHECK(store.oldestResumableRV() == 10);
  auto cursor = store.watchCursor(10);
  REQUIRE(cursor.has_value());
  std::vector<WatchEvent> events;
  REQUIRE(store.readEvents(*cursor, 10, events).has_value());
  REQUIRE(events.size() == 1);
  CHECK(events[0].resource_version == 11);
}

TEST_CASE("Indexes follow updates, including a key moving between index values, and deletes") {
  FakeClock clock;
  ThreadSafeStore store(podStoreOptions(), clock);
  REQUIRE(store.replace({makePod("a", "p1", 1, {{"app", "web"}}, "node-1"), makePod("b", "p2", 2, {{"app", "web"}}, "node-2"),
                         makePod("a", "p3", 3, {{"app", "db"}}, "node-1")},
                        10)
              .has_value());
  const std::string node = indexes::fieldIndexName("spec.nodeName");
  CHECK(keysOf(store.byIndex(node, "node-1")) == std::vector<std::string>{"a/p1", "a/p3"});
  CHECK(keysOf(store.byIndex("labels", "app=web")) == std::vector<std::string>{"a/p1", "b/p2"});
  CHECK(keysOf(store.byIndex("namespace", "b")) == std::vector<std::string>{"b/p2"});

  // p1 moves to node-2 and to app=db.
  REQUIRE(store.apply(EventType::Modified, makePod("a", "p1", 11, {{"app", "db"}}, "node-2")).has_value());
  CHECK(keysOf(store.byIndex(node, "node-1")) == std::vector<std::string>{"a/p3"});
  CHECK(keysOf(store.byIndex(node, "node-2")) == std::vector<std::string>{"a/p1", "b/p2"});
  CHECK(keysOf(store.byIndex("labels", "app=web")) == std::vector<std::string>{"b/p2"});
  CHECK(store.byIndex(node, "node-2")[0]->resourceVersion() == 11);

  REQUIRE(store.apply(EventType::Deleted, makePod("a", "p3", 12, {{"app", "db"}}, "node-1")).has_value());
  CHECK(store.byIndex(node, "node-1").empty());
  CHECK(keysOf(store.byIndex("labels", "app=db")) == std::vector<std::string>{"a/p1"});

  // A relist rebuilds by difference.
  REQUIRE(store.replace({makePod("b", "p2", 2, {{"app", "web"}}, "node-2")}, 20).has_value());
  CHECK(keysOf(store.byIndex(node, "node-2")) == std::vector<std::string>{"b/p2"});
  CHECK(store.byIndex("labels", "app=db").empty());
  CHECK(store.byIndex("no-such-index", "x").empty());
}

TEST_CASE("A snapshot at an older RV shows the state then: index value change and delete undone (P1, P8)") {
  FakeClock clock;
  ThreadSafeStore store(podStoreOptions(), clock);
  REQUIRE(store.replace({makePod("ns", "a", 1, {{"app", "web"}}, "n1"), makePod("ns", "b", 2, {}, "n1")}, 10).has_value());
  auto at10 = store.snapshot();
  REQUIRE(store.apply(EventType::Modified, makePod("ns", "a", 11, {{"app", "db"}}, "n2")).has_value());
  REQUIRE(store.apply(EventType::Deleted, makePod("ns", "b", 12, {}, "n1")).has_value());
  REQUIRE(store.apply(EventType::Added, makePod("ns", "c", 13)).has_value());

  // The snapshot taken at 10 was not disturbed by copy-on-write.
  CHECK(keysOf(at10->list({}).items) == std::vector<std::string>{"ns/a", "ns/b"});
  CHECK(at10->get("ns/a")->resourceVersion() == 1);

  auto exact11 = store.snapshotAt(11);
  REQUIRE(exact11.has_value());
  CHECK((*exact11)->resourceVersion() == 11);
  CHECK(keysOf((*exact11)->list({}).items) == std::vector<std::string>{"ns/a", "ns/b"});
  CHECK((*exact11)->get("ns/a")->resourceVersion() == 11);

  auto exact10 = store.snapshotAt(10);
  REQUIRE(exact10.has_value());
  CHECK((*exact10)->get("ns/a")->resourceVersion() == 1);
  CHECK((*exact10)->get("ns/b") != nullptr);
  CHECK((*exact10)->get("ns/c") == nullptr);
  // Selector reads on snapshots scan with the predicate (no index at old RVs).
  auto web = (*exact10)->list({.predicate = [](const Object& o) { return lookup(o.meta().labels, "app") == "web"; }});
  CHECK(keysOf(web.items) == std::vector<std::string>{"ns/a"});

  auto again = store.snapshotAt(10);
  REQUIRE(again.has_value());
  CHECK(again->get() == exact10->get());  // cached for the next page

  auto future = store.snapshotAt(14);
  REQUIRE_FALSE(future.has_value());
  CHECK(future.error().reason == Reason::Timeout);
  CHECK(future.error().message == "Timeout: Too large resource version: 14, current: 13");
  auto past = store.snapshotAt(9);
  REQUIRE_FALSE(past.has_value());
  CHECK(past.error().reason == Reason::Expired);
  CHECK(past.error().message == "too old resource version: 9");
}

TEST_CASE("Paginating a snapshot stays consistent while writes continue (P1, P4)") {
  FakeClock clock;
  ThreadSafeStore store(podStoreOptions(), clock);
  std::vector<ObjectConstSharedPtr> pods;
  for (int i = 0; i < 1000; ++i) pods.push_back(makePod("ns", "p" + std::to_string(1000 + i), 1 + i));
  REQUIRE(store.replace(pods, 2000).has_value());
  auto first = store.snapshot()->list({.limit = 300});
  CHECK(first.items.size() == 300);
  CHECK(first.has_more);
  CHECK(first.remaining == 700);

  uint64_t rv = 2000;
  for (int i = 0; i < 500; i += 2) {
    REQUIRE(store.apply(EventType::Deleted, makePod("ns", "p" + std::to_string(1000 + i), ++rv)).has_value());
    REQUIRE(store.apply(EventType::Added, makePod("ns", "q" + std::to_string(i), ++rv)).has_value());
  }
  std::vector<std::string> keys = keysOf(first.items);
  std::string start = keys.back() + std::string(1, '\0');
  for (;;) {
    auto snapshot = store.snapshotAt(2000);
    REQUIRE(snapshot.has_value());
    auto page = (*snapshot)->list({.start_key = start, .limit = 300});
    for (auto& k : keysOf(page.items)) keys.push_back(k);
    if (!page.has_more) {
      CHECK(page.remaining == 0);
      break;
    }
    start = keys.back() + std::string(1, '\0');
  }
  CHECK(keys.size() == 1000);
  CHECK(std::is_sorted(keys.begin(), keys.end()));
  CHECK(store.stats().historical_snapshots_built_total == 1);
}

TEST_CASE("The RV readers wait on moves with replace, events and bookmarks, never backwards (R7)") {
  FakeClock clock;
  ThreadSafeStore store(podStoreOptions(), clock);
  CHECK(store.currentRV() == 0);
  REQUIRE(store.replace({}, 10).has_value());
  CHECK(store.currentRV() == 10);
  REQUIRE(store.apply(EventType::Added, makePod("ns", "a", 12)).has_value());
  CHECK(store.currentRV() == 12);
  REQUIRE(store.bookmark(15).has_value());
  CHECK(store.currentRV() == 15);
  CHECK_FALSE(store.bookmark(14).has_value());
  CHECK(store.currentRV() == 15);
}

TEST_CASE("Once history wrapped, watches and Exact reads before its window are Expired (W5, R8)") {
  FakeClock clock;
  StoreOptions options = podStoreOptions();
  options.history = EventHistoryOptions{.capacity = 2, .max_age = std::chrono::seconds(150)};
  ThreadSafeStore store(options, clock);
  REQUIRE(store.replace({makePod("ns", "a", 1)}, 10).has_value());
  for (uint64_t rv = 11; rv <= 14; ++rv) REQUIRE(store.apply(EventType::Modified, makePod("ns", "a", rv)).has_value());
  CHECK(store.oldestResumableRV() == 12);
  auto watch = store.watchCursor(11);
  REQUIRE_FALSE(watch.has_value());
  CHECK(watch.error().message == "too old resource version: 11 (12)");
  CHECK(store.watchCursor(12).has_value());
  CHECK_FALSE(store.snapshotAt(11).has_value());
  auto at12 = store.snapshotAt(12);
  REQUIRE(at12.has_value());
  CHECK((*at12)->get("ns/a")->resourceVersion() == 12);

  clock.advance(std::chrono::seconds(151));
  CHECK(store.evictExpiredHistory() == 2);
  CHECK(store.stats().history_events == 0);
  CHECK(store.oldestResumableRV() == 14);
  CHECK(store.watchCursor(14).has_value());
  CHECK_FALSE(store.watchCursor(13).has_value());
}

TEST_CASE("Cluster-scoped objects are keyed by name alone") {
  ObjectMetaParser parser(ParserOptions{});
  auto node = parser.parseObject(R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"node-1","resourceVersion":"3"}})");
  REQUIRE(node.has_value());
  CHECK((*node)->key() == "node-1");
  FakeClock clock;
  ThreadSafeStore store(StoreOptions{}, clock);
  REQUIRE(store.replace({*node}, 5).has_value());
  CHECK(store.get("node-1") == *node);
  CHECK(store.byIndex("namespace", "").empty());
}

}  // namespace cache
