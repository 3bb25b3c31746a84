#include "cache/snapshot.h"

#include <doctest/doctest.h>

#include "cache/chunked_object_map.h"
#include "tests/unit/cache/doctest_string_view.h"
#include "tests/unit/cache/test_objects.h"

namespace cache {
namespace {

using testing::makePod;

std::vector<std::string> keysOf(const std::vector<ObjectConstSharedPtr>& objects) {
  std::vector<std::string> keys;
  for (const auto& o : objects) keys.push_back(o->key());
  return keys;
}

Snapshot snapshotOf(std::vector<ObjectConstSharedPtr> objects, uint64_t rv = 100) {
  ChunkedObjectMap map;
  for (auto& o : objects) (void)map.upsert(o, 1, 0);
  return Snapshot(rv, map.chunks());
}

}  // namespace

TEST_CASE("Keys are ordered bytewise, so namespace a-b sorts before namespace a (P9)") {
  Snapshot snapshot = snapshotOf({makePod("a", "x", 1), makePod("a-b", "x", 2), makePod("a.c", "x", 3), makePod("b", "x", 4)});
  CHECK(keysOf(snapshot.list({}).items) == std::vector<std::string>{"a-b/x", "a.c/x", "a/x", "b/x"});
  // A namespaced list sees only "<ns>/" keys, not a neighbour whose name shares a prefix.
  CHECK(keysOf(snapshot.list({.namespace_name = "a"}).items) == std::vector<std::string>{"a/x"});
  CHECK(keysOf(snapshot.list({.namespace_name = "a-b"}).items) == std::vector<std::string>{"a-b/x"});
  CHECK(snapshot.list({.namespace_name = "zz"}).items.empty());
}

TEST_CASE("A page reports whether keys remain and how many (P1, P4)") {
  std::vector<ObjectConstSharedPtr> pods;
  for (int i = 0; i < 5; ++i) pods.push_back(makePod("default", "p" + std::to_string(i), 10 + i));
  pods.push_back(makePod("other", "q", 20));
  Snapshot snapshot = snapshotOf(pods);

  auto page = snapshot.list({.namespace_name = "default", .limit = 2});
  CHECK(keysOf(page.items) == std::vector<std::string>{"default/p0", "default/p1"});
  CHECK(page.has_more);
  CHECK(page.remaining == 3);

  const std::string start = "default/p1" + std::string(1, '\0');
  auto next = snapshot.list({.namespace_name = "default", .start_key = start, .limit = 2});
  CHECK(keysOf(next.items) == std::vector<std::string>{"default/p2", "default/p3"});
  CHECK(next.remaining == 1);

  auto last = snapshot.list({.namespace_name = "default", .start_key = "default/p4", .limit = 2});
  CHECK(keysOf(last.items) == std::vector<std::string>{"default/p4"});
  CHECK_FALSE(last.has_more);
  CHECK(last.remaining == 0);

  auto exact_fit = snapshot.list({.namespace_name = "default", .start_key = "default/p3", .limit = 2});
  CHECK(exact_fit.items.size() == 2);
  CHECK_FALSE(exact_fit.has_more);  // the limit was hit on the last key of the range

  auto all = snapshot.list({.limit = 0});
  CHECK(all.items.size() == 6);
  CHECK_FALSE(all.has_more);
}

TEST_CASE("With a selector, pages fill up to the limit and 'more' counts remaining keys (P6)") {
  std::vector<ObjectConstSharedPtr> pods;
  for (int i = 0; i < 10; ++i) pods.push_back(makePod("ns", "p" + std::to_string(i), 1 + i, {{"even", i % 2 ? "no" : "yes"}}));
  Snapshot snapshot = snapshotOf(pods);
  auto even = [](const Object& o) { return lookup(o.meta().labels, "even") == "yes"; };
  auto page = snapshot.list({.limit = 4, .predicate = even});
  CHECK(keysOf(page.items) == std::vector<std::string>{"ns/p0", "ns/p2", "ns/p4", "ns/p6"});
  CHECK(page.has_more);
  auto rest = snapshot.list({.start_key = "ns/p6" + std::string(1, '\0'), .limit = 4, .predicate = even});
  CHECK(keysOf(rest.items) == std::vector<std::string>{"ns/p8"});
  CHECK_FALSE(rest.has_more);
  // The last matching key is p8 but p9 remains: a token although nothing more matches.
  auto tail = snapshot.list({.start_key = "ns/p8", .limit = 1, .predicate = even});
  CHECK(tail.has_more);
  auto empty = snapshot.list({.start_key = "ns/p9", .limit = 1, .predicate = even});
  CHECK(empty.items.empty());
  CHECK_FALSE(empty.has_more);
}

TEST_CASE("Chunks split as the map grows and snapshots keep their version under later writes") {
  ChunkedObjectMap map;
  uint64_t seq = 1;
  for (int i = 0; i < 1000; ++i) (void)map.upsert(makePod("ns", "p" + std::to_string(10000 + i), 1), ++seq, 0);
  CHECK(map.size() == 1000);
  CHECK(map.chunkCount() > 1000 / kChunkMaxSize);
  Snapshot before(1, map.chunks());
  const uint64_t shared_seq = seq;
  (void)map.upsert(makePod("ns", "p10500", 2), ++seq, shared_seq);
  (void)map.erase("ns/p10001", ++seq, shared_seq);
  CHECK(before.get("ns/p10500")->resourceVersion() == 1);
  CHECK(before.get("ns/p10001") != nullptr);
  CHECK(before.size() == 1000);
  Snapshot after(2, map.chunks());
  CHECK(after.get("ns/p10500")->resourceVersion() == 2);
  CHECK(after.get("ns/p10001") == nullptr);
  CHECK(after.size() == 999);
  auto keys = keysOf(after.list({}).items);
  CHECK(std::is_sorted(keys.begin(), keys.end()));

  SUBCASE("removing every object leaves an empty map that still works") {
    for (const auto& k : keys) (void)map.erase(k, ++seq, shared_seq);
    CHECK(map.size() == 0);
    CHECK(map.get("ns/p10500") == nullptr);
    CHECK(Snapshot(3, map.chunks()).list({}).items.empty());
  }
}

TEST_CASE("withChanges re-adds, replaces and removes keys across chunk boundaries") {
  std::vector<ObjectConstSharedPtr> pods;
  for (int i = 0; i < 600; i += 2) pods.push_back(makePod("ns", "p" + std::to_string(1000 + i), 1));
  Snapshot base = snapshotOf(pods);
  std::vector<std::pair<std::string, ObjectConstSharedPtr>> changes = {
      {"ns/a-first", makePod("ns", "a-first", 2)},
      {"ns/p1000", nullptr},
      {"ns/p1257", makePod("ns", "p1257", 2)},
      {"ns/p1258", makePod("ns", "p1258", 3)},
      {"ns/zzz", makePod("ns", "zzz", 2)},
  };
  auto changed = Snapshot::withChanges(base, 50, changes);
  CHECK(changed->resourceVersion() == 50);
  CHECK(changed->size() == base.size() + 2);
  CHECK(changed->get("ns/p1000") == nullptr);
  CHECK(changed->get("ns/p1258")->resourceVersion() == 3);
  CHECK(changed->get("ns/zzz") != nullptr);
  auto keys = keysOf(changed->list({}).items);
  CHECK(keys.front() == "ns/a-first");
  CHECK(keys.back() == "ns/zzz");
  CHECK(std::is_sorted(keys.begin(), keys.end()));
  CHECK(base.get("ns/p1000") != nullptr);
}

}  // namespace cache
