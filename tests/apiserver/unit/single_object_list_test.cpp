// A LIST whose field selector names one object (Store.ListPredicate's MatchesSingle) is
// a non-recursive GetList: with resourceVersion=N and a limit but no
// resourceVersionMatch it is delegated to etcd and read at the current revision, not
// at N; it never pages.
#include <doctest/doctest.h>

#include "api_fixture.h"

namespace testapi {

using test::Fixture;
using test::hasHeader;
using test::parse;

namespace {

struct Versions {
  Fixture f;
  std::string old_rv;      // configmap-0 exists, configmap-1 does not yet
  std::string current_rv;  // both exist

  Versions() {
    f.configMap("configmap-0");
    old_rv = std::to_string(f.storage.currentRv());
    f.configMap("configmap-1");
    current_rv = std::to_string(f.storage.currentRv());
  }
  // The list's resourceVersion, or the status code when the LIST failed.
  std::string listRv(const std::string& target) {
    auto r = f.call("GET", target);
    if (r.status != 200) return "status " + std::to_string(r.status);
    return parse(r.body)["metadata"]["resourceVersion"].GetString();
  }
};

const std::string kConfigMaps = "/api/v1/namespaces/default/configmaps";

}  // namespace

TEST_CASE("A legacy limited LIST at RV=N naming one object answers at the current RV; Exact answers at N") {
  Versions v;
  const std::string named = kConfigMaps + "?resourceVersion=" + v.old_rv + "&limit=36&fieldSelector=metadata.name%3D%3Dconfigmap-0";
  CHECK(v.listRv(named) == v.current_rv);
  auto body = parse(v.f.call("GET", named).body);
  REQUIRE(body["items"].Size() == 1);
  CHECK(std::string(body["items"][0]["metadata"]["name"].GetString()) == "configmap-0");
  CHECK(v.listRv(named + "&resourceVersionMatch=Exact") == v.old_rv);
  // Without the single name it stays an Exact read (R3).
  CHECK(v.listRv(kConfigMaps + "?resourceVersion=" + v.old_rv + "&limit=36") == v.old_rv);
  CHECK(v.listRv(kConfigMaps + "?resourceVersion=" + v.old_rv + "&limit=36&fieldSelector=metadata.name%21%3Dx") ==
        v.old_rv);
  // Without a limit it was NotOlderThan already.
  CHECK(v.listRv(kConfigMaps + "?resourceVersion=" + v.old_rv + "&fieldSelector=metadata.name%3Dconfigmap-0") ==
        v.current_rv);
}

TEST_CASE("The single-object read needs a key: a namespace (or a cluster-scoped resource) and a path-safe name") {
  Versions v;
  const std::string at_old = "?resourceVersion=" + v.old_rv + "&limit=5&fieldSelector=";
  // All namespaces: only a metadata.namespace term supplies one.
  CHECK(v.listRv("/api/v1/configmaps" + at_old + "metadata.name%3Dconfigmap-0") == v.old_rv);
  CHECK(v.listRv("/api/v1/configmaps" + at_old + "metadata.name%3Dconfigmap-0,metadata.namespace%3Ddefault") ==
        v.current_rv);
  CHECK(v.listRv("/api/v1/namespaces" + at_old + "metadata.name%3Ddefault") == v.current_rv);
  CHECK(v.listRv(kConfigMaps + at_old + "metadata.name%3Da%2Fb") == v.old_rv);
  // Other selectors still filter the one object.
  CHECK(v.listRv(kConfigMaps + at_old + "metadata.name%3Dconfigmap-0&labelSelector=app%3Dx") == v.current_rv);
  CHECK(parse(v.f.call("GET", kConfigMaps + at_old + "metadata.name%3Dconfigmap-0&labelSelector=app%3Dx").body)["items"]
            .Size() == 0);
}

TEST_CASE("A single-object LIST never pages") {
  Versions v;
  for (const std::string& rv : {std::string(), "&resourceVersion=" + v.old_rv}) {
    CAPTURE(rv);
    auto page = parse(v.f.call("GET", kConfigMaps + "?limit=1&fieldSelector=metadata.name%3Dconfigmap-0" + rv).body);
    CHECK(page["items"].Size() == 1);
    CHECK_FALSE(page["metadata"].HasMember("continue"));
    CHECK_FALSE(page["metadata"].HasMember("remainingItemCount"));
  }
}

TEST_CASE("etcd refuses a future RV for a single-object LIST at once, without Retry-After") {
  Versions v;
  for (const char* match : {"", "&resourceVersionMatch=Exact"}) {
    CAPTURE(match);
    auto r = v.f.call("GET", kConfigMaps + "?resourceVersion=999999&limit=5&fieldSelector=metadata.name%3Dconfigmap-0" +
                                 match);
    CHECK(r.status == 504);
    CHECK_FALSE(hasHeader(r, "Retry-After"));
    auto st = parse(r.body);
    CHECK(std::string(st["message"].GetString()) ==
          "Timeout: Too large resource version: 999999, current: " + v.current_rv);
    CHECK(st["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge");
    CHECK_FALSE(st["details"].HasMember("retryAfterSeconds"));
  }
  // The watch cache's answer (no single name) keeps its Retry-After (R7).
  CHECK(hasHeader(v.f.call("GET", kConfigMaps + "?resourceVersion=999999&limit=5"), "Retry-After"));
}

TEST_CASE("A compacted RV is no obstacle to the legacy single-object read, but is to Exact (R8)") {
  Versions v;
  v.f.configMap("configmap-2");
  v.f.storage.compact();
  const std::string named = kConfigMaps + "?resourceVersion=" + v.old_rv + "&limit=5&fieldSelector=metadata.name%3Dconfigmap-0";
  CHECK(v.listRv(named) == std::to_string(v.f.storage.currentRv()));
  CHECK(v.listRv(named + "&resourceVersionMatch=Exact") == "status 410");
}

}  // namespace testapi
