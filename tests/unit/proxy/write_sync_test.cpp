// Read-your-writes: which writes are held and when the cache shows them (issue #7).
#include "parse_request_info.h"
#include "proxy/passthrough/write_sync.h"

#include <doctest/doctest.h>

#include "cache/clock.h"
#include "cache/object_meta_parser.h"

using namespace proxy;

namespace {

RequestInfo info(std::string_view method, std::string_view target) { return parseRequestInfo(method, target); }

bool isWrite(std::string_view method, std::string_view target) {
  const size_t q = target.find('?');
  return isObjectWrite(info(method, target),
                       cache::QueryValues::parse(q == std::string_view::npos ? std::string_view{} : target.substr(q + 1)));
}

cache::ObjectConstSharedPtr pod(const std::string& name, uint64_t rv, const std::string& uid = "u-1") {
  static cache::ObjectMetaParser parser(cache::ParserOptions{});
  auto object = parser.parseObject(R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name +
                                   R"(","namespace":"ns","uid":")" + uid + R"(","resourceVersion":")" +
                                   std::to_string(rv) + R"("}})");
  REQUIRE(object);
  return *object;
}

struct Store {
  cache::RealClock clock;
  cache::ThreadSafeStore store{cache::StoreOptions{}, clock};
};

}  // namespace

TEST_CASE("object writes are held; reads, dry runs and connect subresources are not") {
  CHECK(isWrite("POST", "/api/v1/namespaces/ns/pods"));
  CHECK(isWrite("PUT", "/api/v1/namespaces/ns/pods/a"));
  CHECK(isWrite("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d"));
  CHECK(isWrite("DELETE", "/api/v1/namespaces/ns/pods/a"));
  CHECK(isWrite("DELETE", "/api/v1/namespaces/ns/pods"));
  CHECK(isWrite("PUT", "/api/v1/namespaces/ns/pods/a/status"));
  CHECK(isWrite("PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale"));
  CHECK_FALSE(isWrite("GET", "/api/v1/namespaces/ns/pods/a"));
  CHECK_FALSE(isWrite("POST", "/api/v1/namespaces/ns/pods?dryRun=All"));
  CHECK_FALSE(isWrite("POST", "/api/v1/namespaces/ns/pods/a/exec?command=ls"));
  CHECK_FALSE(isWrite("PUT", "/api/v1/namespaces/ns/services/s/proxy/x"));
  CHECK_FALSE(isWrite("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/x/y/z"));
}

TEST_CASE("create, update and patch wait for the answer's resourceVersion") {
  const auto e = expectationFor(info("PUT", "/api/v1/namespaces/ns/pods/a"), "ns",
                                R"({"kind":"Pod","metadata":{"name":"a","namespace":"ns","resourceVersion":"42"}})");
  REQUIRE(e);
  CHECK(e->min_rv == 42);
  CHECK(e->deleted.empty());
  Store s;
  REQUIRE(s.store.replace({pod("a", 41)}, 41));
  CHECK_FALSE(satisfiedBy(*e, s.store));
  REQUIRE(s.store.apply(cache::EventType::Modified, pod("a", 42)));
  CHECK(satisfiedBy(*e, s.store));
}

TEST_CASE("a delete waits until the object left the cache, not for its last resourceVersion") {
  // The apiserver answers a delete with the last stored state of the object.
  const auto e = expectationFor(info("DELETE", "/api/v1/namespaces/ns/pods/a"), "ns",
                                R"({"kind":"Pod","metadata":{"name":"a","namespace":"ns","uid":"u-1","resourceVersion":"41"}})");
  REQUIRE(e);
  REQUIRE(e->deleted.size() == 1);
  CHECK_FALSE(e->deleted[0].stays);
  Store s;
  REQUIRE(s.store.replace({pod("a", 41)}, 41));
  CHECK_FALSE(satisfiedBy(*e, s.store));
  REQUIRE(s.store.apply(cache::EventType::Deleted, pod("a", 43)));
  CHECK(satisfiedBy(*e, s.store));
  // Recreated under the same name: another UID is another object.
  REQUIRE(s.store.apply(cache::EventType::Added, pod("a", 44, "u-2")));
  CHECK(satisfiedBy(*e, s.store));
}

TEST_CASE("a delete that leaves the object terminating waits for that update") {
  const auto e = expectationFor(info("DELETE", "/api/v1/namespaces/ns/pods/a"), "ns",
                                R"({"kind":"Pod","metadata":{"name":"a","namespace":"ns","uid":"u-1","resourceVersion":"42",)"
                                R"("deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":["x/y"]}})");
  REQUIRE(e);
  REQUIRE(e->deleted.size() == 1);
  CHECK(e->deleted[0].stays);
  Store s;
  REQUIRE(s.store.replace({pod("a", 41)}, 41));
  CHECK_FALSE(satisfiedBy(*e, s.store));
  REQUIRE(s.store.apply(cache::EventType::Modified, pod("a", 42)));
  CHECK(satisfiedBy(*e, s.store));
}

TEST_CASE("a delete answered with a Status waits for the object it names") {
  const auto e = expectationFor(info("DELETE", "/api/v1/namespaces/ns/pods/a"), "ns",
                                R"({"kind":"Status","apiVersion":"v1","status":"Success","details":{"name":"a","kind":"pods","uid":"u-1"}})");
  REQUIRE(e);
  REQUIRE(e->deleted.size() == 1);
  CHECK(e->deleted[0].key == "ns/a");
  CHECK(e->deleted[0].uid == "u-1");
}

TEST_CASE("deletecollection waits for every deleted item") {
  const auto e = expectationFor(info("DELETE", "/api/v1/namespaces/ns/pods"), "ns",
                                R"({"kind":"PodList","metadata":{"resourceVersion":"40"},"items":[)"
                                R"({"metadata":{"name":"a","namespace":"ns","uid":"u-1","resourceVersion":"41"}},)"
                                R"({"metadata":{"name":"b","namespace":"ns","uid":"u-3","resourceVersion":"39"}}]})");
  REQUIRE(e);
  REQUIRE(e->deleted.size() == 2);
  Store s;
  REQUIRE(s.store.replace({pod("a", 41), pod("b", 39, "u-3")}, 41));
  REQUIRE(s.store.apply(cache::EventType::Deleted, pod("a", 42)));
  CHECK_FALSE(satisfiedBy(*e, s.store));
  REQUIRE(s.store.apply(cache::EventType::Deleted, pod("b", 43, "u-3")));
  CHECK(satisfiedBy(*e, s.store));
}

TEST_CASE("answers that name nothing are not held") {
  CHECK_FALSE(expectationFor(info("POST", "/api/v1/namespaces/ns/pods/a/eviction"), "ns",
                             R"({"kind":"Status","apiVersion":"v1","status":"Success","code":201})"));
  CHECK_FALSE(expectationFor(info("POST", "/api/v1/namespaces/ns/pods"), "ns", "not json"));
  CHECK_FALSE(expectationFor(info("POST", "/api/v1/namespaces/ns/pods"), "ns", R"({"kind":"Pod","metadata":{}})"));
}

TEST_CASE("the timeout warning is a 299 warning as the apiserver writes them") {
  const std::string w = writeSyncTimeoutWarning("pods", std::chrono::milliseconds(5000));
  CHECK(w.rfind("299 - \"", 0) == 0);
  CHECK(w.back() == '"');
  CHECK(w.find("5000 ms") != std::string::npos);
}
