// The Reflector over the real HttpListerWatcher against a small apiserver stand-in on
// loopback: the whole upstream path, with real sockets and the real clock.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_reflector_store.h"
#include "loopback_server.h"
#include "proxy/upstream/http_lister_watcher.h"
#include "tests/fakes/fake_clock.h"
#include "upstream_json.h"
#include "watch/reflector/reflector.h"

using namespace watch;
using namespace watch::testing;
using cache::testing::eventually;
using proxy::upstream::HttpListerWatcher;

namespace {

// Serves /api/v1/pods: two pods at RV 100, LIST in pages of `limit`, watch-list when
// enabled (else 422 as an apiserver without WatchList does), and one MODIFIED at 101 on
// the first watch after the initial state. Streams then idle until the test ends.
struct PodsApiserver {
  explicit PodsApiserver(bool watch_list) : watch_list_supported(watch_list) {
    server.server.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard lock(mu);
        requests.push_back(describe(req));
      }
      if (req.get_param_value("watch") != "true") return list(req, res);
      if (req.get_param_value("sendInitialEvents") == "true" && !watch_list_supported) {
        res.status = 422;
        res.set_content(statusJson(422, "Invalid", "sendInitialEvents is forbidden"), "application/json");
        return;
      }
      stream(req, res);
    });
    server.start();
  }

  static std::string describe(const httplib::Request& req) {
    std::string out;
    for (const auto& [name, value] : req.params) out += name + "=" + value + " ";
    return out;
  }

  void list(const httplib::Request& req, httplib::Response& res) {
    const size_t limit = req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : pods.size();
    const size_t from = req.has_param("continue") ? std::stoul(req.get_param_value("continue")) : 0;
    std::vector<std::string> page(pods.begin() + from, pods.begin() + std::min(pods.size(), from + limit));
    const size_t next = from + page.size();
    res.set_content(listBody(page, 100, next < pods.size() ? std::to_string(next) : ""), "application/json");
  }

  void stream(const httplib::Request& req, httplib::Response& res) {
    std::string body;
    if (req.get_param_value("sendInitialEvents") == "true") {
      for (const auto& p : pods) body += event("ADDED", p) + "\n";
      body += bookmark(100, true) + "\n";
    }
    if (req.get_param_value("resourceVersion") != "101") body += event("MODIFIED", pod("a", 101)) + "\n";
    res.set_chunked_content_provider("application/json", [this, body](size_t offset, httplib::DataSink& sink) {
      if (offset == 0) sink.write(body.data(), body.size());
      server.idleUntilClosing();
      return false;
    });
  }

  std::vector<std::string> seen() {
    std::lock_guard lock(mu);
    return requests;
  }

  const bool watch_list_supported;
  const std::vector<std::string> pods = {pod("a", 90), pod("b", 95)};
  std::mutex mu;
  std::vector<std::string> requests;
  LoopbackServer server;  // last: stopped first, before the members its handlers use
};

}  // namespace

TEST_CASE("Reflector syncs over HTTP with watch-list, applies later events and stops promptly (W9)") {
  PodsApiserver apiserver(true);
  HttpListerWatcher upstream(apiserver.server.upstream(), "/api/v1/pods");
  FakeReflectorStore store;
  cache::RealClock& clock = cache::RealClock::instance();
  UnlimitedRelistLimiter limiter;
  ReflectorOptions options;
  options.name = "pods";
  Reflector reflector(options, upstream, store, clock, limiter);
  reflector.start();

  REQUIRE(store.waitForCalls(2));
  const auto calls = store.calls();
  CHECK(calls[0].kind == StoreCall::Kind::Replace);
  CHECK(calls[0].rv == 100);
  CHECK(calls[0].objects == apiserver.pods);
  CHECK(calls[1].kind == StoreCall::Kind::Apply);
  CHECK(calls[1].rv == 101);
  CHECK(reflector.stats().mode == SyncMode::WatchList);

  // The upstream's watch stays open: stop() returns only by closing it.
  std::atomic<bool> stopped{false};
  std::jthread stopper([&] {
    reflector.stop();
    stopped = true;
  });
  REQUIRE(eventually([&] { return stopped.load(); }));
  REQUIRE(apiserver.seen().size() == 1);
  const std::string request = apiserver.seen()[0];
  CHECK(request.find("sendInitialEvents=true") != std::string::npos);
  CHECK(request.find("resourceVersionMatch=NotOlderThan") != std::string::npos);
  CHECK(request.find("allowWatchBookmarks=true") != std::string::npos);
  CHECK(request.find("resourceVersion=") == std::string::npos);
}

TEST_CASE("Reflector falls back to paged LIST over HTTP when watch-list gets 422 (W9, K1)") {
  PodsApiserver apiserver(false);
  HttpListerWatcher upstream(apiserver.server.upstream(), "/api/v1/pods");
  FakeReflectorStore store;
  cache::RealClock& clock = cache::RealClock::instance();
  UnlimitedRelistLimiter limiter;
  ReflectorOptions options;
  options.name = "pods";
  options.page_size = 1;
  Reflector reflector(options, upstream, store, clock, limiter);
  reflector.start();

  REQUIRE(store.waitForCalls(2));
  const auto calls = store.calls();
  CHECK(calls[0].kind == StoreCall::Kind::Replace);
  CHECK(calls[0].objects == apiserver.pods);
  CHECK(calls[0].rv == 100);
  CHECK(calls[1].rv == 101);
  CHECK(reflector.stats().mode == SyncMode::List);
  CHECK(reflector.stats().upstream_list_pages_total == 2);
  reflector.stop();

  const auto seen = apiserver.seen();
  REQUIRE(seen.size() == 4);
  CHECK(seen[1] == "limit=1 ");
  CHECK(seen[2] == "continue=1 limit=1 ");
  CHECK(seen[3].find("resourceVersion=100 ") != std::string::npos);
  CHECK(seen[3].find("watch=true") != std::string::npos);
}
