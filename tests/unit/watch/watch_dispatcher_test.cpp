#include <doctest/doctest.h>

#include <atomic>
#include <random>
#include <thread>

#include "watch/fanout/event_encoder.h"
#include "watch_fanout_fixture.h"

using namespace watch;
using namespace watch::testing;

namespace {

std::shared_ptr<CacheWatcher> makeWatcher(WatchFilter filter, size_t capacity = 1000, bool bookmarks = false) {
  return std::make_shared<CacheWatcher>(std::move(filter), CacheWatcherOptions{capacity, bookmarks});
}

void sync(PodFanout& f, std::vector<std::string> items, uint64_t rv) {
  REQUIRE(f.adapter.replace(std::move(items), rv).ok());
}

}  // namespace

TEST_CASE("An event frame is one JSON line carrying the object bytes verbatim (W2, W3)") {
  CHECK(encodeEvent(cache::EventType::Modified, R"({"a":1})") == "{\"type\":\"MODIFIED\",\"object\":{\"a\":1}}\n");
  CHECK(encodeErrorEvent("{\"kind\":\"Status\"}\n") == "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\"}}\n");
}

TEST_CASE("Bookmarks are empty objects of the watched type with the apiserver's shape (W7, W9)") {
  ApiResource pods{"", "v1", "pods", "Pod", "PodList", true, {}, false, nullptr};
  CHECK(BookmarkEncoder(pods).frame(12746) ==
        R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12746"},"spec":{"containers":null},"status":{}}})"
        "\n");
  CHECK(BookmarkEncoder(pods).frame(12500, true) ==
        R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12500","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}})"
        "\n");
  ApiResource cms{"", "v1", "configmaps", "ConfigMap", "ConfigMapList", true, {}, false, nullptr};
  CHECK(BookmarkEncoder(cms).frame(7) ==
        R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"7"}}})"
        "\n");
  ApiResource widgets{"example.com", "v1", "widgets", "Widget", "WidgetList", true, {}, true, nullptr};
  CHECK(BookmarkEncoder(widgets).frame(7) ==
        R"({"type":"BOOKMARK","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"resourceVersion":"7"}}})"
        "\n");
}

TEST_CASE("A selector watch sees an object entering as ADDED and leaving as DELETED with its previous content (W10)") {
  PodFanout f;
  sync(f, {podJson("default", "p", 5, "", "db")}, 10);
  auto w = makeWatcher(filterFor("", "app=web"));
  auto start = f.dispatcher.registerAfter(w, 10);

  REQUIRE(f.adapter.apply(watch::EventType::Modified, podJson("default", "p", 11, "", "web"), 11).ok());
  REQUIRE(f.adapter.apply(watch::EventType::Modified, podJson("default", "p", 12, "", "web"), 12).ok());
  REQUIRE(f.adapter.apply(watch::EventType::Modified, podJson("default", "p", 13, "", "db"), 13).ok());
  REQUIRE(f.adapter.apply(watch::EventType::Modified, podJson("default", "p", 14, "", "db"), 14).ok());

  std::vector<QueuedFrame> frames;
  w->takeAll(frames);
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].frame->bytes().starts_with(R"({"type":"ADDED")"));
  CHECK(frames[1].frame->bytes().starts_with(R"({"type":"MODIFIED")"));
  // Leaving: the previous content (app=web) at the RV of the change that removed it.
  CHECK(frames[2].frame->bytes().starts_with(R"({"type":"DELETED")"));
  CHECK(frames[2].frame->bytes().find(R"("app":"web")") != std::string::npos);
  CHECK(frames[2].frame->bytes().find(R"("resourceVersion":"13")") != std::string::npos);
  CHECK(frames[2].resource_version == 13);
}

TEST_CASE("A namespaced watch sees only its namespace, also through a metadata.namespace field selector (W11)") {
  PodFanout f;
  sync(f, {}, 10);
  auto ns_path = makeWatcher(filterFor("a"));
  auto ns_field = makeWatcher(filterFor("", "", "metadata.namespace=a"));
  auto all = makeWatcher(filterFor(""));
  auto r1 = f.dispatcher.registerAfter(ns_path, 10);
  auto r2 = f.dispatcher.registerAfter(ns_field, 10);
  auto r3 = f.dispatcher.registerAfter(all, 10);
  REQUIRE(f.adapter.apply(watch::EventType::Added, podJson("a", "x", 11), 11).ok());
  REQUIRE(f.adapter.apply(watch::EventType::Added, podJson("b", "y", 12), 12).ok());
  CHECK(drain(*ns_path) == std::vector<std::string>{"ADDED x@11"});
  CHECK(drain(*ns_field) == std::vector<std::string>{"ADDED x@11"});
  CHECK(drain(*all) == std::vector<std::string>{"ADDED x@11", "ADDED y@12"});
}

TEST_CASE("A sharded watch sees only the objects its shard selector selects, with no transition events (W10)") {
  PodFanout f;
  sync(f, {}, 10);
  // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c: a range holding it and not "b"'s hash.
  auto selector = cache::ShardSelector::parse(
      "shardRange(object.metadata.namespace, '0xaf63dc4c8601ec8c', '0xaf63dc4c8601ec8d')");
  REQUIRE(selector);
  auto spec = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  auto sharded = makeWatcher(WatchFilter("", cache::LabelSelector::parse("").value(),
                                         cache::FieldSelector::parse("", *spec).value(), *selector));
  auto reg = f.dispatcher.registerAfter(sharded, 10);
  REQUIRE(f.adapter.apply(watch::EventType::Added, podJson("a", "x", 11), 11).ok());
  REQUIRE(f.adapter.apply(watch::EventType::Added, podJson("b", "y", 12), 12).ok());
  REQUIRE(f.adapter.apply(watch::EventType::Modified, podJson("a", "x", 13, "", "web"), 13).ok());
  REQUIRE(f.adapter.apply(watch::EventType::Modified, podJson("b", "y", 14, "", "web"), 14).ok());
  CHECK(drain(*sharded) == std::vector<std::string>{"ADDED x@11", "MODIFIED x@13"});
}

TEST_CASE("Each event is encoded once and the same bytes are shared by every watcher") {
  PodFanout f;
  sync(f, {}, 10);
  std::vector<std::shared_ptr<CacheWatcher>> watchers;
  std::vector<WatchDispatcher::RegistrationPtr> regs;
  for (int i = 0; i < 100; ++i) {
    watchers.push_back(makeWatcher(filterFor("")));
    regs.push_back(f.dispatcher.registerAfter(watchers.back(), 10).registration);
  }
  REQUIRE(f.adapter.apply(watch::EventType::Added, podJson("a", "x", 11), 11).ok());
  CHECK(f.dispatcher.stats().frames_encoded_total == 1);
  std::vector<QueuedFrame> first, other;
  watchers[0]->takeAll(first);
  watchers[99]->takeAll(other);
  REQUIRE(first.size() == 1);
  REQUIRE(other.size() == 1);
  CHECK(first[0].frame.get() == other[0].frame.get());
}

TEST_CASE("Per-node watchers cost O(interested) per event: only the node's watcher is looked at") {
  PodFanout f;
  sync(f, {}, 10);
  std::vector<std::shared_ptr<CacheWatcher>> watchers;
  std::vector<WatchDispatcher::RegistrationPtr> regs;
  for (int i = 0; i < 5000; ++i) {
    watchers.push_back(makeWatcher(filterFor("", "", "spec.nodeName=node-" + std::to_string(i))));
    regs.push_back(f.dispatcher.registerAfter(watchers.back(), 10).registration);
  }
  REQUIRE(f.adapter.apply(watch::EventType::Added, podJson("a", "x", 11, "node-42"), 11).ok());
  CHECK(f.dispatcher.stats().candidates_visited_total == 1);
  CHECK(drain(*watchers[42]) == std::vector<std::string>{"ADDED x@11"});
  CHECK(watchers[41]->queued() == 0);
  // Moving to another node: the old node's watcher sees it leave, the new one sees it enter.
  REQUIRE(f.adapter.apply(watch::EventType::Modified, podJson("a", "x", 12, "node-7"), 12).ok());
  CHECK(f.dispatcher.stats().candidates_visited_total == 3);
  CHECK(drain(*watchers[42]) == std::vector<std::string>{"DELETED x@12"});
  CHECK(drain(*watchers[7]) == std::vector<std::string>{"ADDED x@12"});
  regs.clear();
  CHECK(f.dispatcher.watcherCount() == 0);
}

TEST_CASE("A watcher whose bounded queue is full is closed and counted; the others keep going (W6)") {
  PodFanout f;
  sync(f, {}, 10);
  auto slow = makeWatcher(filterFor(""), 2);
  auto fast = makeWatcher(filterFor(""), 2);
  auto r1 = f.dispatcher.registerAfter(slow, 10);
  auto r2 = f.dispatcher.registerAfter(fast, 10);
  for (uint64_t rv = 11; rv <= 14; ++rv) {
    REQUIRE(f.adapter.apply(watch::EventType::Added, podJson("a", "p" + std::to_string(rv), rv), rv).ok());
    drain(*fast);
  }
  CHECK(slow->closeReason() == CacheWatcher::CloseReason::TooSlow);
  CHECK(fast->closeReason() == CacheWatcher::CloseReason::Open);
  CHECK(f.dispatcher.watcherCount() == 1);
  // What it had queued stays bounded and intact; its client resumes from the last RV.
  CHECK(drain(*slow) == std::vector<std::string>{"ADDED p11@11", "ADDED p12@12"});
}

TEST_CASE("A relist that changed the store ends the watchers from before it after what they had queued (W6, W11)") {
  PodFanout f;
  sync(f, {podJson("a", "gone1", 3), podJson("a", "gone2", 4), podJson("a", "kept", 5)}, 10);
  auto before = makeWatcher(filterFor(""), 100, true);
  auto other_namespace = makeWatcher(filterFor("b"), 100, true);
  auto reg1 = f.dispatcher.registerAfter(before, 10);
  auto reg2 = f.dispatcher.registerAfter(other_namespace, 10);
  REQUIRE(f.adapter.apply(watch::EventType::Added, podJson("a", "x", 11), 11).ok());
  // Two deletions and a change at RVs nobody saw: no stream may carry them as events
  // (they would share the list's RV), so every watch from before the list ends, also one
  // the differences do not concern (its resume would cross the restarted history).
  sync(f, {podJson("a", "kept", 15), podJson("a", "new", 18), podJson("a", "x", 11)}, 20);
  CHECK(before->closeReason() == CacheWatcher::CloseReason::Relisted);
  CHECK(other_namespace->closeReason() == CacheWatcher::CloseReason::Relisted);
  CHECK(drain(*before) == std::vector<std::string>{"ADDED x@11"});
  CHECK(drain(*other_namespace).empty());
  CHECK(f.dispatcher.watcherCount() == 0);
  CHECK(f.dispatcher.lastRV() == 20);
  CHECK(f.dispatcher.stats().watchers_ended_by_relist_total == 2);

  // Watches from the new state go on, and see what follows it.
  auto after = makeWatcher(filterFor(""), 100, true);
  auto reg3 = f.dispatcher.registerAfter(after, 20);
  REQUIRE(f.adapter.apply(watch::EventType::Deleted, podJson("a", "new", 21), 21).ok());
  CHECK(after->closeReason() == CacheWatcher::CloseReason::Open);
  CHECK(drain(*after) == std::vector<std::string>{"DELETED new@21"});
}

TEST_CASE("A relist that found nothing changed leaves the watchers open with its RV as a bookmark") {
  PodFanout f;
  sync(f, {podJson("a", "kept", 5)}, 10);
  auto w = makeWatcher(filterFor(""), 100, true);
  auto reg = f.dispatcher.registerAfter(w, 10);
  sync(f, {podJson("a", "kept", 5)}, 20);
  CHECK(w->closeReason() == CacheWatcher::CloseReason::Open);
  CHECK(drain(*w) == std::vector<std::string>{"BOOKMARK@20"});
}

TEST_CASE("Upstream bookmarks are forwarded only to watchers that asked, never at or below their start (W7, W11)") {
  PodFanout f;
  sync(f, {}, 10);
  auto with = makeWatcher(filterFor(""), 100, true);
  auto without = makeWatcher(filterFor(""), 100, false);
  auto future = makeWatcher(filterFor(""), 100, true);
  auto r1 = f.dispatcher.registerAfter(with, 10);
  auto r2 = f.dispatcher.registerAfter(without, 10);
  auto r3 = f.dispatcher.registerAfter(future, 30);  // a watch at an RV the cache has not reached
  REQUIRE(f.adapter.bookmark(20).ok());
  REQUIRE(f.adapter.bookmark(20).ok());  // no news: not forwarded again
  REQUIRE(f.adapter.bookmark(40).ok());
  CHECK(drain(*with) == std::vector<std::string>{"BOOKMARK@20", "BOOKMARK@40"});
  CHECK(drain(*without).empty());
  CHECK(drain(*future) == std::vector<std::string>{"BOOKMARK@40"});
  CHECK(f.dispatcher.lastRV() == 40);
}

TEST_CASE("The dispatcher dates the upstream's last word (event or bookmark) by the injected clock") {
  PodFanout f;
  sync(f, {}, 10);
  const auto synced = f.clock.now();
  CHECK(f.dispatcher.lastUpdate() == synced);
  f.clock.advance(std::chrono::seconds(30));
  CHECK(f.dispatcher.lastUpdate() == synced);  // nothing heard: the age grows
  REQUIRE(f.adapter.bookmark(20).ok());
  CHECK(f.dispatcher.lastUpdate() == synced + std::chrono::seconds(30));
}

TEST_CASE("Registration meets history and the live stream without a gap or a duplicate under a concurrent writer (W4, W11)") {
  PodFanout f;
  sync(f, {}, 1);
  constexpr uint64_t kLast = 3000;
  std::atomic<bool> writing{true};
  // On a loaded machine the writer could otherwise finish before the first registration,
  // leaving nothing to check.
  std::atomic<bool> registered{false};
  std::thread writer([&] {
    while (!registered) std::this_thread::yield();
    for (uint64_t rv = 2; rv <= kLast; ++rv) {
      REQUIRE(f.adapter.apply(rv % 3 == 0 ? watch::EventType::Modified : watch::EventType::Added,
                              podJson("ns" + std::to_string(rv % 7), "p" + std::to_string(rv % 50), rv), rv)
                  .ok());
    }
    writing = false;
  });

  std::mt19937 rng(7);
  int checked = 0;
  while (writing || checked < 20) {
    const bool from_snapshot = checked % 2 == 0;
    auto w = makeWatcher(filterFor(""), 1000000);
    std::vector<uint64_t> rvs;
    WatchDispatcher::RegistrationPtr reg;
    uint64_t start_rv = 0;
    if (from_snapshot) {
      auto start = f.dispatcher.registerWithSnapshot(w);
      reg = std::move(start.registration);
      start_rv = start.snapshot->resourceVersion();
    } else {
      start_rv = f.store.currentRV() > 50 ? f.store.currentRV() - rng() % 50 : 1;
      auto start = f.dispatcher.registerAfter(w, start_rv);
      reg = std::move(start.registration);
      if (start_rv < start.replay_through) {
        auto cursor = f.store.watchCursor(start_rv);
        REQUIRE(cursor);
        std::vector<cache::WatchEvent> events;
        REQUIRE(f.store.readEvents(*cursor, SIZE_MAX, events));
        for (const auto& e : events) {
          if (e.resource_version > start.replay_through) break;
          rvs.push_back(e.resource_version);
        }
      }
    }
    registered = true;
    if (start_rv >= kLast) break;
    // Let the writer get further, then collect what arrived live.
    const uint64_t until = std::min<uint64_t>(kLast, f.store.currentRV() + 20);
    while (f.dispatcher.lastRV() < until) std::this_thread::yield();
    std::vector<QueuedFrame> frames;
    w->takeAll(frames);
    for (const auto& fr : frames) rvs.push_back(fr.resource_version);
    reg.reset();
    REQUIRE_FALSE(rvs.empty());
    CHECK(rvs.front() == start_rv + 1);
    bool contiguous = true;
    for (size_t i = 1; i < rvs.size(); ++i) contiguous = contiguous && rvs[i] == rvs[i - 1] + 1;
    CHECK(contiguous);
    ++checked;
    if (f.store.currentRV() >= kLast) break;
  }
  writer.join();
  CHECK(checked > 0);
}

TEST_CASE("A watch moved past a proven revision skips what arrives below it, and only if nothing was dispatched since") {
  PodFanout f;
  sync(f, {podJson("default", "p", 5, "", "web")}, 10);
  auto w = makeWatcher(filterFor("", ""));
  auto snapshot_start = f.dispatcher.registerWithSnapshot(w, 20);  // state at 10 proven at 20
  CHECK(snapshot_start.snapshot->resourceVersion() == 10);
  // A pod created and deleted again below the proven revision: not this watch's.
  REQUIRE(f.adapter.apply(watch::EventType::Added, podJson("default", "tmp", 12, "", "web"), 12).ok());
  REQUIRE(f.adapter.apply(watch::EventType::Deleted, podJson("default", "tmp", 13, "", "web"), 13).ok());
  REQUIRE(f.adapter.apply(watch::EventType::Modified, podJson("default", "p", 21, "", "web"), 21).ok());
  std::vector<QueuedFrame> frames;
  w->takeAll(frames);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].resource_version == 21);

  // skipThrough: refused when an event was dispatched after the RV the caller read.
  auto later = makeWatcher(filterFor("", ""));
  auto resume = f.dispatcher.registerAfter(later, 21);
  CHECK_FALSE(f.dispatcher.skipThrough(*later, 13, 30));
  CHECK(f.dispatcher.skipThrough(*later, 21, 30));
  REQUIRE(f.adapter.apply(watch::EventType::Modified, podJson("default", "p", 25, "", "web"), 25).ok());
  REQUIRE(f.adapter.apply(watch::EventType::Modified, podJson("default", "p", 31, "", "web"), 31).ok());
  frames.clear();
  later->takeAll(frames);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].resource_version == 31);
}
