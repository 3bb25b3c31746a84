// Storage: global RV, event history, rollback for Exact reads, watch registration.
#include <doctest/doctest.h>

#include <thread>

#include <rapidjson/document.h>

#include "tests/apiserver/storage/storage.h"

namespace testapi {
namespace {

struct Fixture {
  ResourceCatalog catalog = ResourceCatalog::builtinDefault();
  const ServedResource& cms = *catalog.find("", "v1", "configmaps");
  Storage storage{catalog, StorageOptions{.history_size = 4}};

  StoredObjectPtr object(const std::string& ns, const std::string& name, uint64_t rv, const std::string& value) {
    rapidjson::Document d;
    std::string json = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"(","namespace":")" +
                       ns + R"(","resourceVersion":")" + std::to_string(rv) + R"("},"data":{"k":")" + value + "\"}}";
    d.Parse(json.c_str());
    return makeStored(cms, d);
  }
  // Creates or updates ns/name with data k=value; returns the committed RV.
  uint64_t put(const std::string& ns, const std::string& name, const std::string& value) {
    auto r = storage.mutate(cms, ns, name, [&](const StoredObjectPtr&, uint64_t rv) -> Result<Storage::Mutation> {
      return Storage::Mutation{Storage::Mutation::Action::Put, object(ns, name, rv, value)};
    });
    return std::get<StoredObjectPtr>(r)->rv;
  }
  uint64_t remove(const std::string& ns, const std::string& name) {
    auto r = storage.mutate(cms, ns, name, [&](const StoredObjectPtr& cur, uint64_t rv) -> Result<Storage::Mutation> {
      return Storage::Mutation{Storage::Mutation::Action::Remove, withResourceVersion(cms, *cur, rv)};
    });
    return std::get<StoredObjectPtr>(r)->rv;
  }
};

std::vector<std::string> keys(const Storage::Snapshot& s) {
  std::vector<std::string> out;
  for (const auto& o : s.items) out.push_back(o->key);
  return out;
}

std::string dataOf(const StoredObject& o) {
  rapidjson::Document d;
  parseStored(o, d);
  return d["data"]["k"].GetString();
}

}  // namespace

TEST_CASE("Every committed write takes the next global resourceVersion (R1)") {
  Fixture f;
  uint64_t a = f.put("ns", "a", "1");
  uint64_t b = f.put("ns", "b", "1");
  CHECK(b == a + 1);
  CHECK(f.storage.currentRv() == b);
  CHECK(f.storage.get(f.cms, "ns", "a")->rv == a);
}

TEST_CASE("Lists are in bytewise key order, so namespace a-b sorts before a (P9)") {
  Fixture f;
  f.put("a", "x", "1");
  f.put("a-b", "x", "1");
  auto snap = f.storage.list(f.cms, "");
  REQUIRE(snap);
  CHECK(keys(*snap) == std::vector<std::string>{"a-b/x", "a/x"});
  auto scoped = f.storage.list(f.cms, "a");
  CHECK(keys(*scoped) == std::vector<std::string>{"a/x"});
}

TEST_CASE("An Exact read rolls the current state back to a retained resourceVersion (R3, P8)") {
  Fixture f;
  uint64_t rv1 = f.put("ns", "a", "old");
  f.put("ns", "a", "new");
  f.put("ns", "b", "1");
  f.remove("ns", "a");
  auto past = f.storage.list(f.cms, "ns", rv1);
  REQUIRE(past);
  CHECK(past->rv == rv1);
  REQUIRE(keys(*past) == std::vector<std::string>{"ns/a"});
  CHECK(dataOf(*past->items[0]) == "old");
}

TEST_CASE("Reads before the compacted resourceVersion are gone (R8)") {
  Fixture f;
  uint64_t first = f.put("ns", "a", "0");
  for (int i = 1; i < 8; ++i) f.put("ns", "a", std::to_string(i));  // history holds 4 events
  CHECK(f.storage.compactedRv() > first);
  CHECK_FALSE(f.storage.list(f.cms, "ns", first));
  CHECK(f.storage.list(f.cms, "ns", f.storage.compactedRv()));
  f.storage.compact();
  CHECK(f.storage.compactedRv() == f.storage.currentRv());
}

TEST_CASE("A watch from a retained resourceVersion replays the later events; an older one is refused (W4, W5)") {
  Fixture f;
  uint64_t rv1 = f.put("ns", "a", "1");
  f.put("ns", "a", "2");
  uint64_t rv3 = f.remove("ns", "a");
  auto w = f.storage.watch(f.cms, "", false, rv1);
  REQUIRE(w);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  auto e1 = w->queue->pop(deadline);
  REQUIRE(e1);
  CHECK(e1->type == EventType::Modified);
  CHECK(dataOf(*e1->prev) == "1");
  auto e2 = w->queue->pop(deadline);
  REQUIRE(e2);
  CHECK(e2->type == EventType::Deleted);
  CHECK(e2->object->rv == rv3);  // W3: the deletion RV
  f.storage.unwatch(f.cms, w->queue);

  for (int i = 0; i < 8; ++i) f.put("ns", "b", std::to_string(i));
  CHECK_FALSE(f.storage.watch(f.cms, "", false, rv1));
}

TEST_CASE("A watch with initial state gets the current objects and then only newer events (W4, W9)") {
  Fixture f;
  f.put("ns", "a", "1");
  auto w = f.storage.watch(f.cms, "ns", true, 0);
  REQUIRE(w);
  CHECK(w->initial.size() == 1);
  CHECK(w->start_rv == f.storage.currentRv());
  uint64_t rv = f.put("ns", "b", "1");
  auto ev = w->queue->pop(std::chrono::steady_clock::now() + std::chrono::seconds(1));
  REQUIRE(ev);
  CHECK(ev->rv == rv);
  CHECK(ev->type == EventType::Added);
  CHECK(f.storage.openWatchCounts()["configmaps"] == 1);
  f.storage.unwatch(f.cms, w->queue);
  CHECK(f.storage.openWatchCounts()["configmaps"] == 0);
}

TEST_CASE("A bookmark resourceVersion is offered only while the watcher has nothing pending (W7, W11)") {
  Fixture f;
  auto w = f.storage.watch(f.cms, "", false, f.storage.currentRv());
  REQUIRE(w);
  CHECK(f.storage.idleRv(f.cms, *w->queue) == f.storage.currentRv());
  f.put("ns", "a", "1");
  CHECK_FALSE(f.storage.idleRv(f.cms, *w->queue));
  w->queue->pop(std::chrono::steady_clock::now());
  CHECK(f.storage.idleRv(f.cms, *w->queue) == f.storage.currentRv());
}

TEST_CASE("An idle resource's bookmarks stand still until a consistent read brings its cache forward") {
  Fixture f;
  f.put("ns", "a", "1");
  auto w = f.storage.watch(f.cms, "", false, f.storage.currentRv());
  REQUIRE(w);
  const uint64_t cm_rv = f.storage.currentRv();
  // Writes to another resource move the cluster's revision, not this cache's.
  const ServedResource& secrets = *f.catalog.find("", "v1", "secrets");
  auto r = f.storage.mutate(secrets, "ns", "s", [&](const StoredObjectPtr&, uint64_t rv) -> Result<Storage::Mutation> {
    rapidjson::Document d;
    const std::string json = R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns","resourceVersion":")" +
                             std::to_string(rv) + R"("}})";
    d.Parse(json.c_str());
    return Storage::Mutation{Storage::Mutation::Action::Put, makeStored(secrets, d)};
  });
  REQUIRE(std::holds_alternative<StoredObjectPtr>(r));
  CHECK(f.storage.currentRv() > cm_rv);
  CHECK(f.storage.idleRv(f.cms, *w->queue) == cm_rv);
  f.storage.progress(f.cms);
  CHECK(f.storage.idleRv(f.cms, *w->queue) == f.storage.currentRv());
}

TEST_CASE("A full watch queue closes the stream instead of growing (W6)") {
  WatchQueue q(2);
  auto ev = std::make_shared<Event>(Event{EventType::Added, 1, nullptr, nullptr, nullptr});
  q.push(ev);
  q.push(ev);
  CHECK_FALSE(q.closed());
  q.push(ev);
  CHECK(q.closed());
  CHECK_FALSE(q.pop(std::chrono::steady_clock::now()));
}

TEST_CASE("Waiting for a future resourceVersion succeeds once a write reaches it (R7)") {
  Fixture f;
  uint64_t target = f.storage.currentRv() + 1;
  CHECK_FALSE(f.storage.waitForRv(target, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)));
  std::jthread writer([&] { f.put("ns", "a", "1"); });
  CHECK(f.storage.waitForRv(target, std::chrono::steady_clock::now() + std::chrono::seconds(5)));
}

}  // namespace testapi

namespace testapi {

TEST_CASE("A silent update advances the resourceVersion without a watch event") {
  Fixture f;
  f.put("ns", "a", "1");
  auto w = f.storage.watch(f.cms, "", false, f.storage.currentRv());
  REQUIRE(w);
  const uint64_t before = f.storage.currentRv();
  CHECK(f.storage.silentUpdate(f.cms, "ns", "a", [&](const StoredObject&, uint64_t rv) { return f.object("ns", "a", rv, "drift"); }));
  CHECK(f.storage.currentRv() == before + 1);
  CHECK(dataOf(*f.storage.get(f.cms, "ns", "a")) == "drift");
  CHECK(w->queue->empty());
  CHECK_FALSE(f.storage.silentUpdate(f.cms, "ns", "missing", [&](const StoredObject& o, uint64_t) {
    return std::make_shared<StoredObject>(o);
  }));
  f.storage.unwatch(f.cms, w->queue);
}

}  // namespace testapi
