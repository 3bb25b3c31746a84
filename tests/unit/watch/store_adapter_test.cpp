#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cache/object_meta_parser.h"
#include "cache/selectors/selectable_fields.h"
#include "cache/thread_safe_store.h"
#include "watch/store_adapter.h"

using watch::EventType;
using watch::RawObject;
using watch::StoreAdapter;
using watch::StoreOutcome;

namespace {

// A pod as a list item or watch event carries it; list items lack kind/apiVersion (L1).
RawObject pod(const std::string& ns, const std::string& name, uint64_t rv, const std::string& node = "n1") {
  return R"({"metadata":{"name":")" + name + R"(","namespace":")" + ns + R"(","resourceVersion":")" +
         std::to_string(rv) + R"(","uid":"u-)" + name + R"("},"spec":{"nodeName":")" + node + R"("}})";
}

cache::ParserOptions podParserOptions() {
  cache::ParserOptions options;
  options.field_spec = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  options.kind = "Pod";
  options.api_version = "v1";
  return options;
}

// One resource's store, parser and adapter, wired as the informer wires them.
struct PodCache {
  cache::ThreadSafeStore store{cache::StoreOptions{}, cache::RealClock::instance()};
  cache::ObjectMetaParser parser{podParserOptions()};
  StoreAdapter adapter{store, parser};
};

}  // namespace

TEST_CASE("A replace parses every item once and makes the list the synced state at the list RV") {
  PodCache c;
  CHECK(c.adapter.resourceVersion() == 0);
  CHECK_FALSE(c.store.hasSynced());

  std::vector<RawObject> items{pod("default", "a", 5), pod("kube-system", "b", 7)};
  REQUIRE(c.adapter.replace(std::move(items), 9).ok());

  CHECK(c.store.hasSynced());
  CHECK(c.adapter.resourceVersion() == 9);
  auto a = c.store.get("default/a");
  REQUIRE(a);
  CHECK(a->resourceVersion() == 5);
  // Items arrive without type meta; the stored object has it back (L1).
  CHECK(a->plainBytes().find(R"("kind":"Pod")") != std::string::npos);
  REQUIRE(c.store.get("kube-system/b"));
}

TEST_CASE("Events are applied in upstream order and a DELETED event removes the key (W3, W4)") {
  PodCache c;
  REQUIRE(c.adapter.replace({pod("default", "a", 5)}, 10).ok());

  REQUIRE(c.adapter.apply(EventType::Added, pod("default", "b", 11), 11).ok());
  REQUIRE(c.adapter.apply(EventType::Modified, pod("default", "a", 12, "n2"), 12).ok());
  CHECK(c.store.get("default/a")->resourceVersion() == 12);
  CHECK(c.adapter.resourceVersion() == 12);

  // The deletion carries the object's last state; the event's RV orders the history.
  REQUIRE(c.adapter.apply(EventType::Deleted, pod("default", "b", 11), 13).ok());
  CHECK_FALSE(c.store.get("default/b"));
  CHECK(c.adapter.resourceVersion() == 13);

  // Watchers resuming from the list RV see all three events with their RVs (W4).
  auto cursor = c.store.watchCursor(10);
  REQUIRE(cursor.has_value());
  std::vector<cache::WatchEvent> events;
  REQUIRE(c.store.readEvents(*cursor, 10, events).has_value());
  REQUIRE(events.size() == 3);
  CHECK(events[2].type == cache::EventType::Deleted);
}

TEST_CASE("An event whose RV is not after the store's is refused as going backwards and changes nothing (W4)") {
  PodCache c;
  REQUIRE(c.adapter.replace({pod("default", "a", 5)}, 10).ok());

  StoreOutcome older = c.adapter.apply(EventType::Modified, pod("default", "a", 8), 8);
  CHECK(older.code == StoreOutcome::Code::ResourceVersionWentBackwards);
  StoreOutcome repeated = c.adapter.apply(EventType::Added, pod("default", "z", 10), 10);
  CHECK(repeated.code == StoreOutcome::Code::ResourceVersionWentBackwards);
  CHECK_FALSE(c.store.get("default/z"));
  CHECK(c.store.get("default/a")->resourceVersion() == 5);
  CHECK(c.adapter.resourceVersion() == 10);
}

TEST_CASE("A bookmark moves the RV forward; an older bookmark or list is refused as going backwards") {
  PodCache c;
  REQUIRE(c.adapter.replace({}, 10).ok());
  REQUIRE(c.adapter.bookmark(10).ok());
  REQUIRE(c.adapter.bookmark(20).ok());
  CHECK(c.adapter.resourceVersion() == 20);

  CHECK(c.adapter.bookmark(15).code == StoreOutcome::Code::ResourceVersionWentBackwards);
  CHECK(c.adapter.replace({pod("default", "a", 3)}, 19).code == StoreOutcome::Code::ResourceVersionWentBackwards);
  CHECK_FALSE(c.store.get("default/a"));

  // A relist at the same or a later RV is the normal recovery path.
  REQUIRE(c.adapter.replace({pod("default", "a", 3)}, 20).ok());
  REQUIRE(c.store.get("default/a"));
}

TEST_CASE("Bytes the parser rejects are an InvalidObject answer and leave the store untouched") {
  PodCache c;
  REQUIRE(c.adapter.replace({pod("default", "a", 5)}, 10).ok());

  CHECK(c.adapter.apply(EventType::Added, "{not json", 11).code == StoreOutcome::Code::InvalidObject);
  CHECK(c.adapter.apply(EventType::Added, R"({"metadata":{"resourceVersion":"11"}})", 11).code ==
        StoreOutcome::Code::InvalidObject);
  CHECK(c.adapter.replace({pod("default", "b", 6), "[]"}, 12).code == StoreOutcome::Code::InvalidObject);

  CHECK(c.adapter.resourceVersion() == 10);
  CHECK(c.store.get("default/a"));
  CHECK_FALSE(c.store.get("default/b"));
}

TEST_CASE("Only ADDED, MODIFIED and DELETED reach the store through apply") {
  PodCache c;
  REQUIRE(c.adapter.replace({}, 10).ok());
  CHECK(c.adapter.apply(EventType::Bookmark, pod("default", "a", 11), 11).code == StoreOutcome::Code::Internal);
  CHECK(c.adapter.resourceVersion() == 10);
}

namespace {

std::string line(const std::string& type, const RawObject& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}";
}

}  // namespace

TEST_CASE("Object event lines are parsed and applied in one pass, with the event's type and RV (W3, W4)") {
  PodCache c;
  REQUIRE(c.adapter.replace({pod("default", "a", 5)}, 10).ok());

  auto added = c.adapter.applyEventLine(line("ADDED", pod("default", "b", 11)), 10);
  REQUIRE(added.handled);
  CHECK(added.status.ok());
  CHECK(added.type == EventType::Added);
  CHECK(added.resource_version == 11);
  auto b = c.store.get("default/b");
  REQUIRE(b);
  // The stored bytes are the event's object exactly, kind/apiVersion included.
  CHECK(b->plainBytes().find(R"("name":"b")") != std::string::npos);
  CHECK(b->meta().fields.size() > 0);  // selectable fields (spec.nodeName) extracted in the same pass

  auto modified = c.adapter.applyEventLine(line("MODIFIED", pod("default", "a", 12, "n2")), 11);
  REQUIRE(modified.handled);
  CHECK(modified.status.ok());
  auto deleted = c.adapter.applyEventLine(line("DELETED", pod("default", "b", 13)), 12);
  REQUIRE(deleted.handled);
  CHECK(deleted.status.ok());
  CHECK_FALSE(c.store.get("default/b"));
  CHECK(c.adapter.resourceVersion() == 13);
}

TEST_CASE("An object event line at or before the given RV is refused as going backwards and changes nothing") {
  PodCache c;
  REQUIRE(c.adapter.replace({pod("default", "a", 5)}, 10).ok());
  auto repeated = c.adapter.applyEventLine(line("ADDED", pod("default", "z", 10)), 10);
  REQUIRE(repeated.handled);
  CHECK(repeated.status.code == StoreOutcome::Code::ResourceVersionWentBackwards);
  auto behind_reflector = c.adapter.applyEventLine(line("ADDED", pod("default", "z", 11)), 11);
  REQUIRE(behind_reflector.handled);
  CHECK(behind_reflector.status.code == StoreOutcome::Code::ResourceVersionWentBackwards);
  CHECK_FALSE(c.store.get("default/z"));
  CHECK(c.adapter.resourceVersion() == 10);
}

TEST_CASE("Bookmark, error and unparsable lines are left to the reflector's decoder untouched") {
  PodCache c;
  REQUIRE(c.adapter.replace({}, 10).ok());
  CHECK_FALSE(c.adapter.applyEventLine(
                          R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"20"}}})", 10)
                  .handled);
  CHECK_FALSE(c.adapter.applyEventLine(R"({"type":"ERROR","object":{"kind":"Status","code":410}})", 10).handled);
  CHECK_FALSE(c.adapter.applyEventLine(R"({"type":"ADDED","object":{not json)", 10).handled);
  CHECK_FALSE(c.adapter.applyEventLine(line("ADDED", R"({"metadata":{"resourceVersion":"11"}})"), 10).handled);
  // Another member order is valid JSON too; the decoder's path takes it.
  CHECK_FALSE(c.adapter.applyEventLine(R"({"object":)" + pod("default", "a", 11) + R"(,"type":"ADDED"})", 10).handled);
  CHECK(c.adapter.resourceVersion() == 10);
  CHECK(c.store.stats().objects == 0);
}

TEST_CASE("Watch-list initial events are parsed as they arrive and applied by the next replace (W9)") {
  PodCache c;
  CHECK(c.adapter.stageInitialLine(line("ADDED", pod("default", "a", 7))));
  CHECK(c.adapter.stageInitialLine(line("ADDED", pod("default", "b", 3))));
  CHECK_FALSE(c.adapter.stageInitialLine(line("MODIFIED", pod("default", "x", 8))));
  CHECK_FALSE(c.adapter.stageInitialLine(line("ADDED", "{broken")));
  CHECK(c.store.stats().objects == 0);  // nothing visible before the replace

  REQUIRE(c.adapter.replace({pod("default", "c", 5)}, 20).ok());
  CHECK(c.store.stats().objects == 3);
  CHECK(c.store.get("default/a")->resourceVersion() == 7);
  CHECK(c.adapter.resourceVersion() == 20);

  // Staged objects of an abandoned attempt never reach a later replace.
  CHECK(c.adapter.stageInitialLine(line("ADDED", pod("default", "stale", 9))));
  c.adapter.clearStaged();
  REQUIRE(c.adapter.replace({}, 21).ok());
  CHECK(c.store.stats().objects == 0);
}
