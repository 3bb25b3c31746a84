// InformerManager against fake discovery and fake upstream collections: which resources
// get an informer, when, and when they go away (issue #4; contract K1, K2, W9, S6).

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cache/clock.h"
#include "tests/fakes/fake_clock.h"
#include "fake_discovery.h"
#include "fake_lister_watcher.h"
#include "upstream_json.h"
#include "watch/informer_manager.h"

using namespace std::chrono_literals;
using watch::ApiResource;
using watch::InformerManager;
using watch::InformerManagerOptions;
using watch::testing::apiResource;
using watch::testing::bookmark;
using watch::testing::event;
using cache::testing::eventually;
using cache::testing::FakeClock;
using watch::testing::FakeDiscovery;
using watch::testing::FakeListerWatcher;
using watch::testing::pod;
using watch::testing::ScriptedWatch;

namespace {


std::string collectionKey(const ApiResource& resource, const std::string& namespace_name) {
  return resource.displayName() + "/" + namespace_name;
}

// The upstream's collections: what each answers, and how many lister-watchers were built.
struct FakeUpstream {
  std::mutex mu;
  std::map<std::string, int> opened;
  std::set<std::string> forbidden;  // collection keys answering 403
  std::set<std::string> not_acceptable;  // collection keys answering 406 (no protobuf)
  // Held by a test to keep every collection from finishing its initial events.
  std::function<void()> before_each_line;

  watch::ListerWatcherFactory factory() {
    return [this](const ApiResource& resource, const std::string& namespace_name) {
      auto fake = std::make_unique<FakeListerWatcher>();
      const std::string key = collectionKey(resource, namespace_name);
      std::lock_guard lock(mu);
      ++opened[key];
      if (not_acceptable.count(key) > 0) {
        for (int i = 0; i < 100; ++i) {
          fake->addWatch(ScriptedWatch{{}, watch::WatchEnd::HttpError, 406, R"({"kind":"Status","code":406})"});
          fake->addList({406, R"({"kind":"Status","code":406})", ""});
        }
        return fake;
      }
      if (forbidden.count(key) > 0) {
        for (int i = 0; i < 100; ++i) {
          fake->addWatch(ScriptedWatch{{}, watch::WatchEnd::HttpError, 403, R"({"kind":"Status","code":403})"});
          fake->addList({403, R"({"kind":"Status","code":403})", ""});
        }
        return fake;
      }
      ScriptedWatch initial;
      initial.lines = {event("ADDED", pod("a", 5)), event("ADDED", pod("b", 6)), bookmark(10, true)};
      initial.hold_open = true;
      initial.before_each_line = before_each_line;
      fake->addWatch(std::move(initial));
      return fake;
    };
  }
  int openedFor(const std::string& key) {
    std::lock_guard lock(mu);
    return opened[key];
  }
};

struct Fixture {
  FakeDiscovery discovery;
  FakeUpstream upstream;
  FakeClock clock;
  watch::UnlimitedRelistLimiter limiter;
  InformerManagerOptions options;
  std::unique_ptr<InformerManager> manager;

  Fixture() {
    discovery.setResources({apiResource("", "v1", "pods", "Pod"), apiResource("", "v1", "configmaps", "ConfigMap"),
                            apiResource("", "v1", "secrets", "Secret"),
                            apiResource("", "v1", "componentstatuses", "ComponentStatus", false, {"get", "list"}),
                            apiResource("apps", "v1", "deployments", "Deployment")});
    options.housekeeping_interval = 5ms;
    options.rediscovery_interval = 0ms;
    options.reflector.backoff.initial = 1ms;
  }
  InformerManager& start() {
    manager = std::make_unique<InformerManager>(options, discovery, upstream.factory(), clock, limiter);
    manager->start();
    return *manager;
  }
  // Waits for `n` more complete rounds of the manager's loop.
  void rounds(uint64_t n = 2) {
    const uint64_t target = manager->roundsForTest() + n;
    REQUIRE(eventually([&] { return manager->roundsForTest() >= target; }));
  }
  std::shared_ptr<watch::CachedResource> synced(std::string_view group, std::string_view version,
                                                std::string_view resource, std::string_view ns = "") {
    std::shared_ptr<watch::CachedResource> found;
    eventually([&] {
      found = manager->find(group, version, resource, ns);
      return found && found->hasSynced();
    });
    return found && found->hasSynced() ? found : nullptr;
  }
};

watch::ConfiguredResource configured(std::string group, std::string resource) {
  watch::ConfiguredResource c;
  c.group = std::move(group);
  c.resource = std::move(resource);
  return c;
}

}  // namespace

TEST_CASE("Configured resources are cached from start-up and readiness waits for their sync (K2, W9)") {
  Fixture f;
  f.options.configured = {configured("", "pods")};
  std::mutex gate;
  std::unique_lock held(gate);
  f.upstream.before_each_line = [&gate] { std::lock_guard pass(gate); };
  auto& manager = f.start();

  REQUIRE(eventually([&] { return f.upstream.openedFor("pods/") == 1; }));
  f.rounds();
  CHECK_FALSE(manager.ready());  // the initial events have not all arrived
  held.unlock();

  REQUIRE(eventually([&] { return manager.ready(); }));
  auto pods = manager.find("", "v1", "pods", "");
  REQUIRE(pods);
  CHECK(pods->hasSynced());
  CHECK(pods->store().stats().objects == 2);
  CHECK(pods->store().currentRV() == 10);
  CHECK(pods->resource().kind == "Pod");
  CHECK(pods->namespaceScope().empty());
  // A namespaced request is answered by the whole collection's informer.
  CHECK(manager.find("", "v1", "pods", "default") == pods);
}

TEST_CASE("The first find of an uncached resource starts one informer on demand and passes through") {
  Fixture f;
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));  // nothing configured

  CHECK(manager.find("", "v1", "configmaps", "") == nullptr);
  for (int i = 0; i < 20; ++i) manager.find("", "v1", "configmaps", i % 2 ? "default" : "");
  auto configmaps = f.synced("", "v1", "configmaps");
  REQUIRE(configmaps);
  CHECK(configmaps->store().stats().objects == 2);
  CHECK(f.upstream.openedFor("configmaps/") == 1);  // one upstream collection however many requests
  CHECK(manager.informers().size() == 1);
}

TEST_CASE("On-demand caching can be turned off; configured resources are still cached") {
  Fixture f;
  f.options.on_demand = false;
  f.options.configured = {configured("apps", "deployments")};
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));
  CHECK(manager.find("apps", "v1", "deployments", ""));
  CHECK(manager.find("", "v1", "configmaps", "") == nullptr);
  f.rounds();
  CHECK(f.upstream.openedFor("configmaps/") == 0);
}

TEST_CASE("The deny list wins over the configuration and over on-demand caching") {
  Fixture f;
  f.options.configured = {configured("", "secrets")};
  f.options.deny = {{"", "secrets"}};
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));
  CHECK(manager.find("", "v1", "secrets", "") == nullptr);
  CHECK(manager.find("", "v1", "secrets", "default") == nullptr);
  f.rounds();
  CHECK(f.upstream.openedFor("secrets/") == 0);
  CHECK(f.upstream.openedFor("secrets/default") == 0);
}

TEST_CASE("Resources without list and watch verbs, subresources and unknown resources are never cached") {
  Fixture f;
  f.options.configured = {configured("", "componentstatuses"), configured("", "nosuchthings")};
  auto& manager = f.start();
  // Neither can ever sync, so neither holds readiness back.
  REQUIRE(eventually([&] { return manager.ready(); }));
  CHECK(manager.find("", "v1", "componentstatuses", "") == nullptr);
  CHECK(manager.find("", "v1", "pods/log", "default") == nullptr);
  CHECK(manager.find("", "v1", "nosuchthings", "") == nullptr);
  f.rounds();
  CHECK(manager.informers().empty());
}

TEST_CASE("An idle on-demand informer is stopped once nobody holds it; a configured one never") {
  Fixture f;
  f.options.idle_timeout = 1min;
  f.options.configured = {configured("", "pods")};
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));
  manager.find("", "v1", "configmaps", "");
  auto held = f.synced("", "v1", "configmaps");
  REQUIRE(held);

  f.clock.advance(2min);
  f.rounds();
  // A downstream watch still holds it: in use, not idle.
  CHECK(manager.informers().size() == 2);

  held.reset();
  REQUIRE(eventually([&] { return manager.informers().size() == 1; }));
  CHECK(manager.informers().front()->resource().resource == "pods");
  CHECK(manager.find("", "v1", "configmaps", "") == nullptr);  // starts it again
  REQUIRE(f.synced("", "v1", "configmaps"));
  CHECK(f.upstream.openedFor("configmaps/") == 2);
}

TEST_CASE("A find resets the idle timer") {
  Fixture f;
  f.options.idle_timeout = 1min;
  auto& manager = f.start();
  manager.find("", "v1", "configmaps", "");
  REQUIRE(f.synced("", "v1", "configmaps"));
  for (int i = 0; i < 3; ++i) {
    f.clock.advance(40s);
    REQUIRE(manager.find("", "v1", "configmaps", ""));
    f.rounds();
  }
  CHECK(manager.informers().size() == 1);
}

TEST_CASE("A forbidden cluster-wide list falls back to one informer per requested namespace") {
  Fixture f;
  f.upstream.forbidden = {"pods/"};
  f.options.configured = {configured("", "pods")};
  auto& manager = f.start();
  // Forbidden is settled, not pending: readiness does not wait for it.
  REQUIRE(eventually([&] { return manager.ready(); }));
  REQUIRE(eventually([&] { return f.upstream.openedFor("pods/") == 1 && manager.informers().empty(); }));

  CHECK(manager.find("", "v1", "pods", "web") == nullptr);
  auto web = f.synced("", "v1", "pods", "web");
  REQUIRE(web);
  CHECK(web->namespaceScope() == "web");
  CHECK(manager.find("", "v1", "pods", "") == nullptr);  // cluster-wide reads pass through
  CHECK(manager.find("", "v1", "pods", "db") == nullptr);
  REQUIRE(f.synced("", "v1", "pods", "db"));
  f.rounds();
  CHECK(f.upstream.openedFor("pods/") == 1);  // never retried cluster-wide
  CHECK(manager.informers().size() == 2);
}

TEST_CASE("Configured namespaces get one informer each and no cluster-wide one") {
  Fixture f;
  auto pods = configured("", "pods");
  pods.namespaces = {"web", "db"};
  f.options.configured = {pods};
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));
  CHECK(manager.find("", "v1", "pods", "web")->namespaceScope() == "web");
  CHECK(manager.find("", "v1", "pods", "db")->namespaceScope() == "db");
  CHECK(manager.find("", "v1", "pods", "") == nullptr);
  f.rounds();
  CHECK(f.upstream.openedFor("pods/") == 0);
}

TEST_CASE("A custom resource takes its field selectors and list kind from its CRD, else metadata only (S6)") {
  Fixture f;
  auto widgets = apiResource("example.com", "v1", "widgets", "Widget");
  widgets.custom = true;
  auto gadgets = apiResource("example.com", "v1", "gadgets", "Gadget");
  gadgets.custom = true;
  f.discovery.setResources({widgets, gadgets});
  f.discovery.setCustomFields("widgets.example.com", {"WidgetCollection", {"spec.color"}});
  f.options.configured = {configured("example.com", "widgets"), configured("example.com", "gadgets")};
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));

  auto cached_widgets = manager.find("example.com", "v1", "widgets", "");
  REQUIRE(cached_widgets);
  const auto& spec = cached_widgets->resource().field_spec;
  REQUIRE(spec);
  REQUIRE(spec->fields.size() == 1);
  CHECK(spec->fields[0].name == "spec.color");
  CHECK(spec->error_style == cache::FieldErrorStyle::LabelNotSupported);
  CHECK(cached_widgets->resource().list_kind == "WidgetCollection");

  auto cached_gadgets = manager.find("example.com", "v1", "gadgets", "");
  REQUIRE(cached_gadgets);
  REQUIRE(cached_gadgets->resource().field_spec);
  CHECK(cached_gadgets->resource().field_spec->fields.empty());
  CHECK(cached_gadgets->resource().list_kind == "GadgetList");
}

TEST_CASE("Built-in resources get the built-in field selector table") {
  Fixture f;
  f.options.configured = {configured("", "pods")};
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));
  auto pods = manager.find("", "v1", "pods", "");
  REQUIRE(pods);
  REQUIRE(pods->resource().field_spec);
  bool has_node_name = false;
  for (const auto& field : pods->resource().field_spec->fields) has_node_name |= field.name == "spec.nodeName";
  CHECK(has_node_name);
  CHECK(pods->store().hasIndex(cache::indexes::fieldIndexName("spec.nodeName")));
}

TEST_CASE("Readiness waits for discovery, which is retried until it answers") {
  Fixture f;
  f.discovery.setError("connection refused");
  f.options.configured = {configured("", "pods")};
  auto& manager = f.start();
  REQUIRE(eventually([&] { return f.discovery.discoveries >= 1; }));
  f.rounds();
  CHECK_FALSE(manager.ready());
  CHECK(manager.find("", "v1", "pods", "") == nullptr);

  f.discovery.setError("");
  f.clock.advance(1h);  // past any retry delay
  REQUIRE(eventually([&] { return manager.ready(); }));
  CHECK(manager.find("", "v1", "pods", ""));
}

TEST_CASE("A resource discovery has not seen triggers a new discovery (a CRD created later)") {
  Fixture f;
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));
  const int before = f.discovery.discoveries;
  auto widgets = apiResource("example.com", "v1", "widgets", "Widget");
  widgets.custom = true;
  f.discovery.setResources({widgets});

  CHECK(manager.find("example.com", "v1", "widgets", "") == nullptr);
  REQUIRE(eventually([&] { return f.discovery.discoveries > before; }));
  manager.find("example.com", "v1", "widgets", "");
  REQUIRE(f.synced("example.com", "v1", "widgets"));
}

TEST_CASE("Stopping the manager stops every informer; held caches stay readable") {
  Fixture f;
  f.options.configured = {configured("", "pods")};
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));
  auto pods = manager.find("", "v1", "pods", "");
  manager.stop();
  CHECK(manager.find("", "v1", "pods", "") == nullptr);
  CHECK(manager.informers().empty());
  CHECK(pods->store().stats().objects == 2);
}

TEST_CASE("Per-namespace informers are capped: beyond the cap, reads of other namespaces pass through (issue 16, finding 4)") {
  Fixture f;
  f.upstream.forbidden = {"pods/"};
  f.options.configured = {configured("", "pods")};
  f.options.max_namespace_informers = 2;
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));
  REQUIRE(f.synced("", "v1", "pods", "ns1"));
  REQUIRE(f.synced("", "v1", "pods", "ns2"));
  CHECK(manager.find("", "v1", "pods", "ns3") == nullptr);
  f.rounds();
  CHECK(manager.find("", "v1", "pods", "ns3") == nullptr);
  CHECK(f.upstream.openedFor("pods/ns3") == 0);
  CHECK(manager.informers().size() == 2);
}

TEST_CASE("Only DNS-1123 labels are namespaces: other names get no informer and no cache (issue 36, finding 4)") {
  Fixture f;
  f.upstream.forbidden = {"pods/"};
  f.options.configured = {configured("", "pods"), configured("", "configmaps")};
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));
  REQUIRE(f.synced("", "v1", "configmaps", ""));
  for (const char* name : {"\r\nFORGED", "a b", "Web", "-web", "web-", "a.b", "a%0Db", "x/y"}) {
    CAPTURE(name);
    CHECK(manager.find("", "v1", "pods", name) == nullptr);                   // no per-namespace informer
    CHECK(manager.find("", "v1", "configmaps", name) == nullptr);             // nor the cluster-wide cache
    CHECK(manager.findRunning("", "v1", "configmaps", name) == nullptr);
  }
  f.rounds();
  CHECK(manager.informers().size() == 1);
  CHECK(manager.find("", "v1", "configmaps", "web-0") != nullptr);
  CHECK(manager.find("", "v1", "pods", std::string(63, 'a')) == nullptr);  // a label: started
  REQUIRE(f.synced("", "v1", "pods", std::string(63, 'a')));
  CHECK(manager.find("", "v1", "pods", std::string(64, 'a')) == nullptr);
}

TEST_CASE("A namespace the upstream refuses is not tried again until its backoff has passed (issue 16, finding 4)") {
  Fixture f;
  f.upstream.forbidden = {"pods/", "pods/locked"};
  f.options.configured = {configured("", "pods")};
  f.options.refusal_backoff = std::chrono::minutes(1);
  f.options.max_refusal_backoff = std::chrono::minutes(4);
  // The fake clock moves on every reflector sleep: keep a 403-retrying reflector from
  // carrying it past a retry while this test looks for none.
  f.options.reflector.backoff.cap = 1ms;
  f.options.reflector.backoff.jitter = 0;
  auto& manager = f.start();
  REQUIRE(eventually([&] { return manager.ready(); }));
  CHECK(manager.find("", "v1", "pods", "locked") == nullptr);
  // Started, refused, given up and remembered: no informer, and asking again for a few
  // rounds of the manager's loop opens nothing more.
  REQUIRE(eventually([&] {
    manager.find("", "v1", "pods", "locked");
    const int before = f.upstream.openedFor("pods/locked");
    f.rounds(3);
    manager.find("", "v1", "pods", "locked");
    f.rounds(3);
    return before >= 1 && manager.informers().empty() && f.upstream.openedFor("pods/locked") == before;
  }));
  const int opened = f.upstream.openedFor("pods/locked");
  for (int i = 0; i < 20; ++i) CHECK(manager.find("", "v1", "pods", "locked") == nullptr);
  f.rounds();
  CHECK(f.upstream.openedFor("pods/locked") == opened);
  // Past the longest backoff a refusal can have grown to: tried once more.
  f.clock.advance(f.options.max_refusal_backoff + std::chrono::minutes(1));
  manager.find("", "v1", "pods", "locked");
  REQUIRE(eventually([&] { return f.upstream.openedFor("pods/locked") == opened + 1; }));
}

TEST_CASE("N2: a resource read in protobuf gets an informer of its own; one the upstream refuses (406) is dropped") {
  Fixture f;
  f.upstream.not_acceptable.insert("secrets/");
  auto& manager = f.start();
  f.rounds();
  // Two encodings, two informers, two upstream connections.
  CHECK_FALSE(manager.find("", "v1", "pods", ""));
  CHECK_FALSE(manager.find("", "v1", "pods", "", cache::Encoding::Protobuf));
  REQUIRE(eventually([&] { return f.upstream.openedFor("pods/") == 2; }));
  REQUIRE(f.synced("", "v1", "pods"));
  // Registered once its first sync has begun, which may take a while under TSan (the
  // fake upstream's objects are JSON, so it never syncs).
  std::shared_ptr<watch::CachedResource> protobuf;
  REQUIRE(eventually([&] {
    protobuf = manager.find("", "v1", "pods", "", cache::Encoding::Protobuf);
    return protobuf != nullptr;
  }));
  CHECK(protobuf->encoding() == cache::Encoding::Protobuf);
  CHECK(manager.find("", "v1", "pods", "")->encoding() == cache::Encoding::Json);

  CHECK(manager.cacheableInProtobuf("", "v1", "secrets"));
  CHECK_FALSE(manager.find("", "v1", "secrets", "", cache::Encoding::Protobuf));
  REQUIRE(eventually([&] { return !manager.cacheableInProtobuf("", "v1", "secrets"); }));
  f.rounds();
  CHECK_FALSE(manager.find("", "v1", "secrets", "", cache::Encoding::Protobuf));
  f.rounds();
  CHECK(f.upstream.openedFor("secrets/") == 1);  // not asked again
  CHECK_FALSE(manager.cacheableInProtobuf("", "v1", "widgets"));  // unknown
}

TEST_CASE("An informer queued or syncing is 'starting' (--cache-start-wait waits for it); a synced one is not") {
  Fixture f;
  std::mutex gate;
  std::unique_lock held(gate);
  f.upstream.before_each_line = [&gate] { std::lock_guard pass(gate); };
  auto& manager = f.start();
  f.rounds();
  CHECK_FALSE(manager.starting("", "v1", "pods", "", cache::Encoding::Json));  // nobody asked yet
  CHECK_FALSE(manager.find("", "v1", "pods", ""));
  CHECK(manager.starting("", "v1", "pods", "", cache::Encoding::Json));
  CHECK(manager.starting("", "v1", "pods", "default", cache::Encoding::Json));  // the whole collection answers it
  CHECK_FALSE(manager.starting("", "v1", "pods", "", cache::Encoding::Protobuf));
  CHECK_FALSE(manager.starting("", "v1", "widgets", "", cache::Encoding::Json));  // not served: never starts
  held.unlock();
  REQUIRE(f.synced("", "v1", "pods"));
  CHECK_FALSE(manager.starting("", "v1", "pods", "", cache::Encoding::Json));
}
