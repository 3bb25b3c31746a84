#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cache/object_meta_parser.h"
#include "cache/thread_safe_store.h"
#include "fake_lister_watcher.h"
#include "tests/fakes/fake_clock.h"
#include "watch/drift_check.h"
#include "watch/resource_state.h"
#include "watch/store_adapter.h"

using namespace watch;
using watch::testing::FakeListerWatcher;

namespace {

std::string podJson(const std::string& name, uint64_t rv) {
  return R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","namespace":"ns","resourceVersion":")" + std::to_string(rv) + R"("}})";
}

std::string metadataItem(const std::string& name, uint64_t rv) {
  return R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":")" + name +
         R"(","namespace":"ns","resourceVersion":")" + std::to_string(rv) + R"("}})";
}

std::string metadataList(const std::vector<std::string>& items, uint64_t rv, const std::string& token = "") {
  std::string body = R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":")" +
                     std::to_string(rv) + R"(")" + (token.empty() ? "" : R"(,"continue":")" + token + "\"") +
                     R"(},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) body += (i ? "," : "") + items[i];
  return body + "]}";
}

struct PodCache {
  cache::ThreadSafeStore store{cache::StoreOptions{}, cache::RealClock::instance()};
  cache::ObjectMetaParser parser{cache::ParserOptions{}};
  StoreAdapter adapter{store, parser};
};

struct TempDir {
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kcp-rs-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string path;
};

}  // namespace

TEST_CASE("Drift check lists at the cache's RV exactly, as metadata, page by page, and finds nothing when equal (R3, N4)") {
  PodCache c;
  REQUIRE(c.adapter.replace({podJson("a", 5), podJson("b", 7)}, 10).ok());
  FakeListerWatcher upstream;
  upstream.addList({200, metadataList({metadataItem("a", 5)}, 10, "t1"), ""});
  upstream.addList({200, metadataList({metadataItem("b", 7)}, 10), ""});
  const DriftReport report = checkDrift(upstream, c.store, {}, {});
  CHECK(report.outcome == DriftReport::Outcome::Same);
  CHECK(report.resource_version == 10);
  const auto requests = upstream.listRequests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].resource_version == "10");
  CHECK(requests[0].resource_version_match == "Exact");
  CHECK(requests[0].limit == 500);
  CHECK(requests[0].accept.find("as=PartialObjectMetadataList;g=meta.k8s.io;v=v1") != std::string::npos);
  CHECK(requests[1].continue_token == "t1");
}

TEST_CASE("Drift check names changed, missing and extra keys") {
  PodCache c;
  REQUIRE(c.adapter.replace({podJson("a", 5), podJson("b", 7), podJson("c", 8)}, 10).ok());
  FakeListerWatcher upstream;
  upstream.addList({200, metadataList({metadataItem("a", 5), metadataItem("b", 9), metadataItem("d", 6)}, 10), ""});
  const DriftReport report = checkDrift(upstream, c.store, {}, {});
  CHECK(report.outcome == DriftReport::Outcome::Differs);
  CHECK(report.differences == 3);
  CHECK(report.keys == std::vector<std::string>{"ns/b (cache 7, upstream 9)", "ns/c (cache 8, upstream none)",
                                                "ns/d (cache none, upstream 6)"});
}

TEST_CASE("Drift check reports 410 and outages as unavailable, not as drift") {
  PodCache c;
  REQUIRE(c.adapter.replace({podJson("a", 5)}, 10).ok());
  FakeListerWatcher upstream;
  upstream.addList({410, R"({"kind":"Status","code":410,"reason":"Expired"})", ""});
  CHECK(checkDrift(upstream, c.store, {}, {}).outcome == DriftReport::Outcome::Unavailable);
  CHECK(checkDrift(upstream, c.store, {}, {}).outcome == DriftReport::Outcome::Unavailable);  // no response
  PodCache empty;
  CHECK(checkDrift(upstream, empty.store, {}, {}).outcome == DriftReport::Outcome::Unavailable);
}

TEST_CASE("ResourceState saves a synced store and loads it into another; a corrupt file is refused and counted") {
  TempDir dir;
  cache::testing::FakeClock clock;
  const cache::StateIdentity identity{"", "v1", "pods", ""};
  const cache::StateFileOptions here{{"https://10.0.0.1:443", "uid-1"}, ""};
  PodCache source;
  REQUIRE(source.adapter.replace({podJson("a", 5), podJson("b", 7)}, 12).ok());
  ResourceState state(dir.path, here, identity, "pods", nullptr, clock);
  CHECK_FALSE(ResourceState(dir.path, here, identity, "pods", nullptr, clock).save(PodCache{}.store));  // not synced: nothing
  REQUIRE(state.save(source.store));
  CHECK(state.stats().saves_total == 1);
  // Reported in wall time, which the clock gives.
  CHECK(state.stats().last_save_unix_seconds ==
        std::chrono::duration_cast<std::chrono::seconds>(clock.wallNow().time_since_epoch()).count());

  PodCache target;
  ResourceState loader(dir.path, here, identity, "pods", nullptr, clock);
  CHECK(loader.load(target.adapter) == 12);
  CHECK(target.store.currentRV() == 12);
  REQUIRE(target.store.get("ns/b"));
  CHECK(target.store.get("ns/b")->plainBytes() == podJson("b", 7));
  CHECK(loader.stats().loads_total == 1);

  // Another resource's file name, same directory: nothing there.
  PodCache other;
  CHECK(ResourceState(dir.path, here, {"", "v1", "configmaps", ""}, "configmaps", nullptr, clock).load(other.adapter) == 0);

  {
    std::fstream f(state.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(60);
    f.put('\x7f');
  }
  PodCache refused;
  ResourceState corrupt(dir.path, here, identity, "pods", nullptr, clock);
  CHECK(corrupt.load(refused.adapter) == 0);
  CHECK(corrupt.stats().load_failures_total == 1);
  CHECK_FALSE(refused.store.hasSynced());

  // While the upstream's cluster is not known, nothing is saved (and nothing loaded).
  const cache::StateFileOptions unknown{{"https://10.0.0.1:443", ""}, ""};
  CHECK_FALSE(ResourceState(dir.path, unknown, identity, "pods", nullptr, clock).save(source.store));
  PodCache unverified;
  REQUIRE(state.save(source.store));
  ResourceState blind(dir.path, unknown, identity, "pods", nullptr, clock);
  CHECK(blind.load(unverified.adapter) == 0);
  CHECK(blind.stats().load_failures_total == 1);
}
