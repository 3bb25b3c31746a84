#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "fake_lister_watcher.h"
#include "fake_reflector_store.h"
#include "tests/fakes/fake_clock.h"
#include "upstream_json.h"
#include "watch/reflector/reflector.h"

using namespace watch;
using namespace watch::testing;
using cache::Clock;
using cache::testing::eventually;
using cache::testing::FakeClock;
using Kind = StoreCall::Kind;

namespace {

class CountingRelistLimiter final : public RelistLimiter {
 public:
  bool acquire(std::stop_token stop) override {
    acquired.fetch_add(1);
    return !stop.stop_requested();
  }
  std::atomic<int> acquired{0};
};

// One reflector wired to fakes. The reflector is stopped (and joined) before the fakes die.
struct Harness {
  explicit Harness(bool use_watch_list = true) {
    options.name = "pods";
    options.use_watch_list = use_watch_list;
    options.seed = 7;
    options.log = [this](LogLevel, std::string_view message) {
      std::lock_guard lock(log_mu);
      log_lines.emplace_back(message);
    };
  }
  ~Harness() { stopReflector(); }

  void start() {
    reflector = std::make_unique<Reflector>(options, upstream, store, clock, limiter);
    reflector->start();
  }
  void stopReflector() {
    if (reflector) reflector->stop();
  }
  const ReflectorStats& stats() const { return reflector->stats(); }

  ReflectorOptions options;
  FakeListerWatcher upstream;
  FakeReflectorStore store;
  FakeClock clock;
  CountingRelistLimiter limiter;
  std::unique_ptr<Reflector> reflector;
  std::mutex log_mu;
  std::vector<std::string> log_lines;
  bool logged(const std::string& text) {
    std::lock_guard lock(log_mu);
    for (const auto& line : log_lines) {
      if (line == text) return true;
    }
    return false;
  }
};

ScriptedWatch lines(std::vector<std::string> l, WatchEnd end = WatchEnd::Closed) {
  ScriptedWatch w;
  w.lines = std::move(l);
  w.end = end;
  return w;
}

ScriptedWatch held(std::vector<std::string> l) {
  ScriptedWatch w;
  w.lines = std::move(l);
  w.hold_open = true;
  return w;
}

ScriptedWatch httpError(int status, std::string body) {
  ScriptedWatch w;
  w.end = WatchEnd::HttpError;
  w.status = status;
  w.body = std::move(body);
  return w;
}

ScriptedWatch transportError() {
  ScriptedWatch w;
  w.end = WatchEnd::TransportError;
  w.transport_error = "Connection refused";
  return w;
}

ListResponse ok(const std::string& body) { return {200, body, ""}; }

bool isWatchList(const ListOptions& o) {
  return o.send_initial_events == true && o.resource_version_match == "NotOlderThan" &&
         o.allow_watch_bookmarks && o.resource_version.empty();
}

}  // namespace

TEST_CASE("Reflector syncs with watch-list and keeps consuming the same stream (W9, K2)") {
  Harness h;
  h.upstream.addWatch(held({event("ADDED", pod("b", 8467)), event("ADDED", pod("a", 5726)), bookmark(12400),
                            bookmark(12500, true), event("MODIFIED", pod("a", 12600))}));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(1));

  const auto req = h.upstream.watchRequests().at(0);
  CHECK(isWatchList(req));
  CHECK(req.timeout_seconds >= 300);
  CHECK(req.timeout_seconds < 600);
  CHECK(h.upstream.listRequests().empty());

  const auto calls = h.store.calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].kind == Kind::Replace);
  CHECK(calls[0].rv == 12500);
  CHECK(calls[0].objects == std::vector<std::string>{pod("b", 8467), pod("a", 5726)});
  CHECK(calls[1].kind == Kind::Apply);
  CHECK(calls[1].type == EventType::Modified);
  CHECK(calls[1].rv == 12600);
  CHECK(calls[1].objects.at(0) == pod("a", 12600));

  CHECK(h.reflector->hasSynced());
  CHECK(h.stats().mode == SyncMode::WatchList);
  CHECK(h.stats().last_sync_objects == 2);
  CHECK(h.stats().last_sync_resource_version == 12500);
  CHECK(h.stats().events_applied_total == 1);
  CHECK(h.stats().upstream_relists_total == 1);
  CHECK(h.store.resourceVersion() == 12600);
  CHECK(h.clock.sleeps().empty());
  CHECK(h.logged("pods: synced 2 objects (0.0 MB) at resourceVersion 12500 in 0.00 s via watch-list"));
}

TEST_CASE("Reflector logs progress of a long initial sync every 10 s") {
  Harness h;
  ScriptedWatch initial = held({event("ADDED", pod("a", 1)), event("ADDED", pod("b", 2)), event("ADDED", pod("c", 3)),
                                bookmark(10, true)});
  initial.before_each_line = [&h] { h.clock.advance(std::chrono::seconds(6)); };
  h.upstream.addWatch(std::move(initial));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(1));
  // Clock at the lines: 6 s, 12 s (report), 18 s, 24 s (the bookmark).
  // Issue 19: objects, bytes, time and rate (no estimate: a first watch-list has no total).
  CHECK(h.logged("pods: watch-list: 2 objects, 0.0 MB in 12.0 s (0 objects/s, 0.0 MB/s)"));
  CHECK_FALSE(h.logged("pods: watch-list: 3 objects, 0.0 MB in 18.0 s (0 objects/s, 0.0 MB/s)"));
  CHECK(h.logged("pods: synced 3 objects (0.0 MB) at resourceVersion 10 in 24.00 s via watch-list"));
  // The progress /debug/status shows ends with the sync.
  CHECK(h.stats().sync_started_unix_ms == 0);
  CHECK(h.stats().sync_objects == 3);
}

TEST_CASE("Reflector falls back to paged LIST when watch-list is refused, and remembers it (W9, K1, P)") {
  Harness h;
  h.upstream.addWatch(httpError(422, statusJson(422, "Invalid", "sendInitialEvents is forbidden")));
  h.upstream.addList(ok(listBody({pod("a", 5)}, 20, "tok-1")));
  h.upstream.addList(ok(listBody({pod("b", 9)}, 20)));
  h.upstream.addWatch(lines({event("MODIFIED", pod("a", 21)), expiredEvent()}));
  h.upstream.addList(ok(listBody({pod("a", 21), pod("b", 9)}, 30)));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(3));

  const auto lists = h.upstream.listRequests();
  REQUIRE(lists.size() == 3);
  CHECK(lists[0].limit == 500);
  CHECK(lists[0].resource_version.empty());
  CHECK(lists[0].continue_token.empty());
  CHECK(lists[1].continue_token == "tok-1");
  CHECK(lists[1].limit == 500);
  CHECK(lists[2].continue_token.empty());
  CHECK(lists[2].resource_version.empty());

  const auto watches = h.upstream.watchRequests();
  CHECK(isWatchList(watches[0]));
  CHECK(watches[1].resource_version == "20");
  CHECK_FALSE(watches[1].send_initial_events.has_value());
  CHECK(watches[1].allow_watch_bookmarks);
  CHECK(watches[2].resource_version == "30");  // no second watch-list attempt

  const auto calls = h.store.calls();
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].kind == Kind::Replace);
  CHECK(calls[0].objects == std::vector<std::string>{pod("a", 5), pod("b", 9)});
  CHECK(calls[0].rv == 20);
  CHECK(calls[1].kind == Kind::Apply);
  CHECK(calls[2].kind == Kind::Replace);
  CHECK(calls[2].rv == 30);

  CHECK(h.stats().upstream_watch_list_fallbacks_total == 1);
  CHECK(h.stats().mode == SyncMode::List);
  CHECK(h.stats().upstream_relists_total == 2);
  CHECK(h.stats().upstream_list_pages_total == 3);
}

TEST_CASE("Reflector falls back to LIST when watch-list ends before the initial-events-end bookmark (W9)") {
  Harness h;
  SUBCASE("clean close") { h.upstream.addWatch(lines({event("ADDED", pod("a", 5)), bookmark(9)})); }
  SUBCASE("transport error after events") {
    h.upstream.addWatch(lines({event("ADDED", pod("a", 5))}, WatchEnd::TransportError));
  }
  SUBCASE("ERROR event other than expiry") {
    h.upstream.addWatch(lines({event("ADDED", pod("a", 5)), errorEvent(400, "BadRequest", "no")}));
  }
  h.upstream.addList(ok(listBody({pod("a", 5)}, 10)));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));

  const auto calls = h.store.calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].kind == Kind::Replace);
  CHECK(calls[0].rv == 10);
  CHECK(h.stats().upstream_watch_list_fallbacks_total == 1);
  CHECK(h.stats().mode == SyncMode::List);
  CHECK(h.upstream.watchRequests().at(1).resource_version == "10");
}

TEST_CASE("Reflector retries watch-list, not LIST, when the upstream is unreachable or overloaded") {
  Harness h;
  SUBCASE("connection refused") { h.upstream.addWatch(transportError()); }
  SUBCASE("HTTP 429") { h.upstream.addWatch(httpError(429, statusJson(429, "TooManyRequests", "storage is (re)initializing"))); }
  SUBCASE("ERROR 410") { h.upstream.addWatch(lines({expiredEvent()})); }
  h.upstream.addWatch(held({bookmark(10, true)}));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  CHECK(isWatchList(h.upstream.watchRequests().at(1)));
  CHECK(h.upstream.listRequests().empty());
  CHECK(h.stats().upstream_watch_list_fallbacks_total == 0);
  CHECK(h.clock.sleeps().size() == 1);
  CHECK(h.reflector->hasSynced());
}

TEST_CASE("Reflector re-watches from the last RV without relisting after a clean close (W6, K1.3)") {
  Harness h;
  h.upstream.addWatch(lines({bookmark(10, true), event("ADDED", pod("c", 11)), event("DELETED", pod("c", 12))}));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  const auto second = h.upstream.watchRequests().at(1);
  CHECK(second.resource_version == "12");
  CHECK_FALSE(second.send_initial_events.has_value());
  CHECK(second.allow_watch_bookmarks);
  CHECK(second.timeout_seconds >= 300);
  CHECK(h.stats().upstream_relists_total == 1);
  CHECK(h.stats().upstream_watch_restarts_total == 1);
  CHECK(h.limiter.acquired == 1);
  CHECK(h.clock.sleeps().empty());
  const auto calls = h.store.calls();
  REQUIRE(calls.size() == 3);
  CHECK(calls[2].type == EventType::Deleted);
  CHECK(calls[2].rv == 12);
}

TEST_CASE("Reflector re-watches at once when a stream that delivered events is cut (W6, client-go's EOF)") {
  Harness h(false);
  h.upstream.addList(ok(listBody({}, 10)));
  h.upstream.addWatch(lines({event("ADDED", pod("a", 11)), bookmark(15)}, WatchEnd::TransportError));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  CHECK(h.upstream.watchRequests().at(1).resource_version == "15");
  CHECK(h.clock.sleeps().empty());
  CHECK(h.stats().upstream_relists_total == 1);
  CHECK(h.stats().upstream_backoffs_total == 0);
}

TEST_CASE("Reflector backs off after a very short watch that delivered nothing (W6)") {
  Harness h(false);
  h.upstream.addList(ok(listBody({}, 10)));
  h.upstream.addWatch(lines({}));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  CHECK(h.upstream.watchRequests().at(1).resource_version == "10");
  CHECK(h.clock.sleeps().size() == 1);
  CHECK(h.stats().upstream_relists_total == 1);
}

TEST_CASE("Reflector relists with an unset resourceVersion after a 410 Expired ERROR event (W5, R8, K1)") {
  SUBCASE("list mode") {
    Harness h(false);
    h.upstream.addList(ok(listBody({pod("a", 5)}, 10)));
    h.upstream.addWatch(lines({event("MODIFIED", pod("a", 11)), expiredEvent()}));
    h.upstream.addList(ok(listBody({pod("a", 40)}, 40)));
    h.start();
    REQUIRE(h.upstream.waitForBlockedWatch(2));
    const auto lists = h.upstream.listRequests();
    REQUIRE(lists.size() == 2);
    CHECK(lists[1].resource_version.empty());  // consistent, never "0"
    CHECK(lists[1].resource_version_match.empty());
    CHECK(h.upstream.watchRequests().at(1).resource_version == "40");
    CHECK(h.stats().upstream_relists_total == 2);
    CHECK(h.limiter.acquired == 2);
    CHECK(h.clock.sleeps().size() == 1);  // jittered backoff before the relist
  }
  SUBCASE("watch-list mode") {
    Harness h;
    h.upstream.addWatch(lines({bookmark(10, true), expiredEvent()}));
    h.upstream.addWatch(held({bookmark(40, true)}));
    h.start();
    REQUIRE(h.upstream.waitForBlockedWatch(2));
    CHECK(isWatchList(h.upstream.watchRequests().at(1)));
    CHECK(h.stats().upstream_relists_total == 2);
    CHECK(h.store.calls().back().rv == 40);
  }
}

TEST_CASE("Reflector relists at once when a resumed watch is answered 410, and backs off when a fresh list's watch is") {
  Harness h(false);
  h.upstream.addList(ok(listBody({}, 10)));
  h.upstream.addWatch(lines({event("ADDED", pod("a", 11))}));
  // An apiserver restart: the resumed watch's RV is older than its rebuilt cache.
  h.upstream.addWatch(lines({expiredEvent()}));
  h.upstream.addList(ok(listBody({pod("a", 11)}, 40)));
  // The watch of that list is answered 410 too: something is wrong upstream; back off.
  h.upstream.addWatch(httpError(410, statusJson(410, "Expired", "too old")));
  h.upstream.addList(ok(listBody({pod("a", 11)}, 50)));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(4));
  REQUIRE(h.upstream.listRequests().size() == 3);
  CHECK(h.upstream.watchRequests().at(3).resource_version == "50");
  CHECK(h.limiter.acquired == 3);  // the limiter still spaces every relist
  CHECK(h.clock.sleeps().size() == 1);
  CHECK(h.stats().upstream_backoffs_total == 1);
}

TEST_CASE("Reflector relists after HTTP 410 and after 504 TooLargeResourceVersion (R7, R8)") {
  Harness h(false);
  h.upstream.addList(ok(listBody({}, 10)));
  SUBCASE("HTTP 410") { h.upstream.addWatch(httpError(410, statusJson(410, "Expired", "too old"))); }
  SUBCASE("HTTP 504 TooLarge") { h.upstream.addWatch(httpError(504, tooLargeStatus())); }
  SUBCASE("ERROR event 504 TooLarge") { h.upstream.addWatch(lines({event("ERROR", tooLargeStatus())})); }
  h.upstream.addList(ok(listBody({}, 50)));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  REQUIRE(h.upstream.listRequests().size() == 2);
  CHECK(h.upstream.listRequests()[1].resource_version.empty());
  CHECK(h.upstream.watchRequests().at(1).resource_version == "50");
  CHECK(h.stats().upstream_relists_total == 2);
}

TEST_CASE("Reflector backs off and re-watches from the last RV on 429, 5xx and transport errors (K1.3)") {
  Harness h(false);
  h.upstream.addList(ok(listBody({}, 10)));
  h.upstream.addWatch(lines({event("ADDED", pod("a", 11)), bookmark(15)}));
  SUBCASE("HTTP 429") { h.upstream.addWatch(httpError(429, statusJson(429, "TooManyRequests", "slow down"))); }
  SUBCASE("HTTP 503") { h.upstream.addWatch(httpError(503, "service unavailable")); }
  SUBCASE("plain HTTP 504 gateway timeout") { h.upstream.addWatch(httpError(504, "gateway timeout")); }
  SUBCASE("ERROR event 500") { h.upstream.addWatch(lines({errorEvent(500, "InternalError", "etcd")})); }
  SUBCASE("connection refused") { h.upstream.addWatch(transportError()); }
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(3));
  CHECK(h.upstream.watchRequests().at(2).resource_version == "15");
  CHECK(h.upstream.listRequests().size() == 1);
  CHECK(h.stats().upstream_relists_total == 1);
  const auto sleeps = h.clock.sleeps();
  REQUIRE(sleeps.size() == 1);
  CHECK(sleeps[0] >= std::chrono::milliseconds(800));
  CHECK(sleeps[0] < std::chrono::milliseconds(1600));
}

TEST_CASE("Reflector's backoff grows across consecutive failures (K1.6)") {
  Harness h(false);
  h.upstream.addList(ok(listBody({}, 10)));
  for (int i = 0; i < 5; ++i) h.upstream.addWatch(transportError());
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(6));
  const auto sleeps = h.clock.sleeps();
  REQUIRE(sleeps.size() == 5);
  long base = 800;
  for (auto s : sleeps) {
    const auto got = std::chrono::duration_cast<std::chrono::milliseconds>(s).count();
    CHECK(got >= base);
    CHECK(got < 2 * base);
    base *= 2;
  }
  CHECK(h.upstream.watchRequests().back().resource_version == "10");
  CHECK(h.stats().upstream_backoffs_total == 5);
}

TEST_CASE("Reflector answers an RV going backwards with a counted relist, not a crash (W11)") {
  Harness h(false);
  h.upstream.addList(ok(listBody({}, 10)));
  SUBCASE("event") {
    h.upstream.addWatch(lines({event("ADDED", pod("a", 12)), event("MODIFIED", pod("a", 11))}));
  }
  SUBCASE("event repeating the last RV") {
    h.upstream.addWatch(lines({event("ADDED", pod("a", 12)), event("MODIFIED", pod("a", 12))}));
  }
  SUBCASE("bookmark") { h.upstream.addWatch(lines({event("ADDED", pod("a", 12)), bookmark(11)})); }
  h.upstream.addList(ok(listBody({pod("a", 12)}, 20)));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  CHECK(h.stats().resource_version_backwards_total == 1);
  CHECK(h.stats().upstream_relists_total == 2);
  const auto calls = h.store.calls();
  REQUIRE(calls.size() == 3);  // replace, the one good event, replace
  CHECK(calls[1].rv == 12);
  CHECK(calls[2].kind == Kind::Replace);
}

TEST_CASE("Reflector relists when the store refuses an event") {
  Harness h(false);
  h.upstream.addList(ok(listBody({}, 10)));
  h.upstream.addWatch(lines({event("ADDED", pod("a", 12))}));
  h.upstream.addList(ok(listBody({}, 20)));
  h.store.refuseCall(1, {StoreOutcome::Code::ResourceVersionWentBackwards, "12 is older than 13"});
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  CHECK(h.stats().store_errors_total == 1);
  CHECK(h.stats().resource_version_backwards_total == 1);
  CHECK(h.stats().events_applied_total == 0);
  CHECK(h.upstream.listRequests().size() == 2);
}

TEST_CASE("Reflector counts a malformed event line and relists") {
  Harness h(false);
  h.upstream.addList(ok(listBody({}, 10)));
  h.upstream.addWatch(lines({event("ADDED", pod("a", 11)), "{\"type\":\"ADDED\",\"object\":{", event("ADDED", pod("b", 12))}));
  h.upstream.addList(ok(listBody({}, 20)));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  CHECK(h.stats().malformed_events_total == 1);
  CHECK(h.stats().events_applied_total == 1);  // the line after the bad one is never applied
  CHECK(h.upstream.listRequests().size() == 2);
}

TEST_CASE("Upstream bookmarks advance the store's RV (W7)") {
  Harness h(false);
  h.upstream.addList(ok(listBody({}, 10)));
  h.upstream.addWatch(lines({bookmark(15), bookmark(15), bookmark(90)}));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  const auto calls = h.store.calls();
  REQUIRE(calls.size() == 4);
  CHECK(calls[1].kind == Kind::Bookmark);
  CHECK(calls[1].rv == 15);
  CHECK(calls[3].rv == 90);
  CHECK(h.store.resourceVersion() == 90);
  CHECK(h.stats().bookmarks_total == 3);
  CHECK(h.upstream.watchRequests().at(1).resource_version == "90");
}

TEST_CASE("Reflector restarts a paged LIST whose continue token expired (P7)") {
  Harness h(false);
  h.upstream.addList(ok(listBody({pod("a", 5)}, 20, "tok-1")));
  h.upstream.addList({410, statusJson(410, "Expired", "The provided continue parameter is too old"), ""});
  h.upstream.addList(ok(listBody({pod("a", 5)}, 30, "tok-2")));
  h.upstream.addList(ok(listBody({pod("b", 6)}, 30)));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(1));
  const auto lists = h.upstream.listRequests();
  REQUIRE(lists.size() == 4);
  CHECK(lists[2].continue_token.empty());
  CHECK(lists[3].continue_token == "tok-2");
  const auto calls = h.store.calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].objects == std::vector<std::string>{pod("a", 5), pod("b", 6)});
  CHECK(calls[0].rv == 30);
}

TEST_CASE("Every relist waits on the shared RelistLimiter") {
  Harness h(false);
  h.upstream.addList({503, "unavailable", ""});
  h.upstream.addList({0, "", "Connection refused"});
  h.upstream.addList(ok(listBody({}, 10)));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(1));
  CHECK(h.limiter.acquired == 3);
  CHECK(h.clock.sleeps().size() == 2);
  CHECK(h.reflector->hasSynced());
}

TEST_CASE("Stopping interrupts a blocked watch promptly") {
  FakeListerWatcher upstream;
  FakeReflectorStore store;
  cache::RealClock& clock = cache::RealClock::instance();
  UnlimitedRelistLimiter limiter;
  ReflectorOptions options;
  options.use_watch_list = false;
  upstream.addList(ok(listBody({}, 10)));
  Reflector reflector(options, upstream, store, clock, limiter);
  reflector.start();
  REQUIRE(upstream.waitForBlockedWatch(1));
  // The watch blocks until its stop token fires: stop() returns only by interrupting it.
  std::atomic<bool> stopped{false};
  std::jthread stopper([&] {
    reflector.stop();
    stopped = true;
  });
  REQUIRE(eventually([&] { return stopped.load(); }));
  CHECK_FALSE(upstream.blocked());
}

TEST_CASE("Stopping interrupts a backoff wait promptly") {
  FakeListerWatcher upstream;
  FakeReflectorStore store;
  cache::RealClock& clock = cache::RealClock::instance();
  UnlimitedRelistLimiter limiter;
  ReflectorOptions options;
  options.use_watch_list = false;
  options.backoff.initial = std::chrono::hours(1);
  options.backoff.cap = std::chrono::hours(1);
  upstream.addList({0, "", "Connection refused"});
  Reflector reflector(options, upstream, store, clock, limiter);
  reflector.start();
  REQUIRE(upstream.waitUntil([&] { return reflector.stats().upstream_backoffs_total == 1; }));
  // The backoff is an hour: stop() returns only by interrupting the clock's sleep.
  std::atomic<bool> stopped{false};
  std::jthread stopper([&] {
    reflector.stop();
    stopped = true;
  });
  REQUIRE(eventually([&] { return stopped.load(); }));
  CHECK(upstream.listRequests().size() == 1);
}

TEST_CASE("Warm start: a saved state is served at once and the watch resumes from its RV, without a list") {
  Harness h;
  h.options.warm_start = [](ReflectorStore& store) {
    CHECK(store.replace({pod("a", 90)}, 100).ok());
    return uint64_t{100};
  };
  h.upstream.addWatch(held({event("MODIFIED", pod("a", 101))}));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(1));

  const auto req = h.upstream.watchRequests().at(0);
  CHECK(req.resource_version == "100");
  CHECK_FALSE(req.send_initial_events.has_value());
  CHECK(req.allow_watch_bookmarks);
  CHECK(h.upstream.listRequests().empty());
  CHECK(h.limiter.acquired == 0);
  CHECK(h.reflector->hasSynced());
  CHECK(h.stats().mode == SyncMode::Saved);
  CHECK(h.stats().warm_start_resource_version == 100);
  CHECK(h.stats().upstream_relists_total == 0);
  CHECK(h.stats().upstream_watch_restarts_total == 0);
  CHECK(h.store.resourceVersion() == 101);
  // Caught up once the open stream has been quiet for caught_up_quiet.
  CHECK_FALSE(h.reflector->caughtUp());
  h.clock.advance(h.options.caught_up_quiet);
  CHECK(h.reflector->caughtUp());
  CHECK(h.logged("pods: serving the saved state at resourceVersion 100; resuming the watch from it"));
}

TEST_CASE("Warm start: a bookmark on the resumed watch means caught up") {
  Harness h;
  h.options.warm_start = [](ReflectorStore& store) {
    CHECK(store.replace({}, 100).ok());
    return uint64_t{100};
  };
  h.upstream.addWatch(held({bookmark(150)}));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(1));
  CHECK(h.reflector->caughtUp());
}

TEST_CASE("Warm start: 410 on the resumed watch relists (R8, W5)") {
  Harness h;
  h.options.warm_start = [](ReflectorStore&) { return uint64_t{100}; };
  h.upstream.addWatch(lines({expiredEvent()}));
  h.upstream.addWatch(held({event("ADDED", pod("a", 200)), bookmark(210, true)}));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  CHECK(h.upstream.watchRequests().at(0).resource_version == "100");
  CHECK(isWatchList(h.upstream.watchRequests().at(1)));
  CHECK(h.stats().upstream_relists_total == 1);
  CHECK(h.reflector->caughtUp());
  CHECK(h.stats().mode == SyncMode::WatchList);
}

TEST_CASE("Warm start: no saved state (0) starts cold") {
  Harness h;
  h.options.warm_start = [](ReflectorStore&) { return uint64_t{0}; };
  h.upstream.addWatch(held({bookmark(210, true)}));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(1));
  CHECK(isWatchList(h.upstream.watchRequests().at(0)));
  CHECK(h.stats().warm_start_resource_version == 0);
  CHECK(h.reflector->caughtUp());
}

TEST_CASE("requestRelist ends an idle watch and relists (drift repair)") {
  Harness h;
  h.upstream.addWatch(held({bookmark(100, true)}));
  h.upstream.addWatch(held({event("ADDED", pod("a", 300)), bookmark(310, true)}));
  h.start();
  REQUIRE(h.upstream.waitForBlockedWatch(1));
  h.reflector->requestRelist();
  REQUIRE(h.upstream.waitForBlockedWatch(2));
  CHECK(isWatchList(h.upstream.watchRequests().at(1)));
  CHECK(h.stats().upstream_relists_total == 2);
  CHECK(h.stats().requested_relists_total == 1);
  CHECK(h.store.resourceVersion() == 310);
  CHECK(h.clock.sleeps().empty());
}
