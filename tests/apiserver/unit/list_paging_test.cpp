// Pagination over a snapshot: tokens, remainingItemCount, page filling (P1-P6).
#include <doctest/doctest.h>

#include <rapidjson/document.h>

#include "tests/apiserver/lists/list_paging.h"

namespace testapi {
namespace {

struct Fixture {
  ResourceCatalog catalog = ResourceCatalog::builtinDefault();
  const ServedResource& pods = *catalog.find("", "v1", "pods");
  Storage::Snapshot snap;

  void add(const std::string& ns, const std::string& name, const std::string& app) {
    rapidjson::Document d;
    std::string json = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":")" + ns +
                       R"(","resourceVersion":"7","labels":{"app":")" + app + R"("}},"spec":{}})";
    d.Parse(json.c_str());
    snap.items.push_back(makeStored(pods, d));
  }
  ObjectFilter filter(const std::string& ns, const std::string& labels = "") {
    ListOptions o;
    o.label_selector = labels;
    return std::get<ObjectFilter>(ObjectFilter::make(pods, ns, "", o));
  }
};

ContinueToken decode(const std::string& token) { return std::get<ContinueToken>(decodeContinue(token)); }

}  // namespace

TEST_CASE("A page of an all-namespaces list continues after /<ns>/<name> plus NUL (P2, P4)") {
  Fixture f;
  f.snap.rv = 42;
  f.add("a", "p1", "web");
  f.add("a", "p2", "web");
  f.add("b", "p1", "db");
  Page page = paginate(f.snap, f.pods, f.filter(""), true, "", 2);
  CHECK(page.items.size() == 2);
  // The watch cache's token keeps the '/' after the list's key ("/pods").
  CHECK(page.continue_token == encodeContinue(42, std::string("/a/p2\0", 6)));
  auto tok = decode(page.continue_token);
  CHECK(tok.rv == 42);
  CHECK(tok.start == std::string("a/p2\0", 5));
  CHECK(page.remaining_item_count == 1);
  Page next = paginate(f.snap, f.pods, f.filter(""), true, tok.start, 2);
  REQUIRE(next.items.size() == 1);
  CHECK(next.items[0]->key == "b/p1");
  CHECK(next.continue_token.empty());  // P1: the last page has no token
  CHECK_FALSE(next.remaining_item_count);
}

TEST_CASE("A namespaced list's token holds only /<name> (P2)") {
  Fixture f;
  f.snap.rv = 5;
  f.add("a", "p1", "web");
  f.add("a", "p2", "web");
  Page page = paginate(f.snap, f.pods, f.filter("a"), false, "", 1);
  CHECK(page.continue_token == encodeContinue(5, std::string("/p1\0", 4)));
  CHECK(decode(page.continue_token).start == std::string("p1\0", 3));
  // etcd's form of the same position, without the '/', continues alike.
  Page next = paginate(f.snap, f.pods, f.filter("a"), false, decode(encodeContinue(5, std::string("p1\0", 3))).start, 1);
  REQUIRE(next.items.size() == 1);
  CHECK(next.items[0]->name == "p2");
}

TEST_CASE("Selectors fill pages and drop remainingItemCount (P4, P6)") {
  Fixture f;
  f.snap.rv = 9;
  f.add("a", "p1", "web");
  f.add("a", "p2", "db");
  f.add("a", "p3", "web");
  f.add("a", "p4", "db");
  Page page = paginate(f.snap, f.pods, f.filter("", "app=web"), true, "", 2);
  REQUIRE(page.items.size() == 2);
  CHECK(page.items[1]->name == "p3");
  // P6: more keys remain, so a token is returned although nothing else matches.
  CHECK_FALSE(page.continue_token.empty());
  CHECK_FALSE(page.remaining_item_count);
  Page last = paginate(f.snap, f.pods, f.filter("", "app=web"), true, decode(page.continue_token).start, 2);
  CHECK(last.items.empty());
  CHECK(last.continue_token.empty());
}

TEST_CASE("A list envelope omits kind on built-in items and never has null items (L1)") {
  Fixture f;
  f.add("a", "p1", "web");
  ListMetaOut meta;
  meta.resource_version = "3";
  std::string body = renderList(f.pods, f.snap.items, meta);
  rapidjson::Document d;
  d.Parse(body.c_str());
  REQUIRE(d.IsObject());
  CHECK(std::string(d["kind"].GetString()) == "PodList");
  CHECK(std::string(d["metadata"]["resourceVersion"].GetString()) == "3");
  CHECK_FALSE(d["items"][0].HasMember("kind"));
  CHECK(renderList(f.pods, {}, meta).find("\"items\":[]") != std::string::npos);
}

TEST_CASE("A named watch rejects a field selector naming another object (W1)") {
  Fixture f;
  ListOptions o;
  o.field_selector = "metadata.name=other";
  auto r = ObjectFilter::make(f.pods, "a", "mine", o);
  REQUIRE(std::holds_alternative<ApiError>(r));
  CHECK(std::get<ApiError>(r).message == "fieldSelector metadata.name doesn't match requested name");
}

TEST_CASE("A metadata.namespace field selector narrows an all-namespaces request (W11)") {
  Fixture f;
  ListOptions o;
  o.field_selector = "metadata.namespace=b";
  auto r = ObjectFilter::make(f.pods, "", "", o);
  REQUIRE(std::holds_alternative<ObjectFilter>(r));
  CHECK(std::get<ObjectFilter>(r).namespaceScope() == "b");
}

TEST_CASE("A required metadata.name makes a LIST a single-object read when its key can be built") {
  Fixture f;
  const ServedResource& nodes = *f.catalog.find("", "v1", "nodes");
  auto single = [&](const ServedResource& res, const std::string& ns, const std::string& fields,
                    const std::string& token = "") -> std::optional<std::string> {
    ListOptions o;
    o.field_selector = fields;
    o.continue_token = token;
    auto r = ObjectFilter::make(res, ns, "", o);
    REQUIRE(std::holds_alternative<ObjectFilter>(r));
    return std::get<ObjectFilter>(r).singleObjectName();
  };
  CHECK(single(f.pods, "a", "metadata.name=p1") == "p1");
  CHECK(single(f.pods, "a", "metadata.name==p1") == "p1");
  CHECK(single(nodes, "", "metadata.name=n1") == "n1");  // cluster-scoped: no namespace needed
  // Other terms do not matter; of two names the first in sorted term order is the key.
  CHECK(single(f.pods, "a", "status.phase=Running,metadata.name=p1") == "p1");
  CHECK(single(f.pods, "a", "metadata.name=p2,metadata.name==p1") == "p1");
  // An all-namespaces request gets a namespace from a valid metadata.namespace.
  CHECK(single(f.pods, "", "metadata.namespace=b,metadata.name=p1") == "p1");
  CHECK_FALSE(single(f.pods, "", "metadata.name=p1"));
  CHECK_FALSE(single(f.pods, "", "metadata.namespace=B_,metadata.name=p1"));
  // No key for these: "!=" requires nothing, and the key functions refuse the names.
  CHECK_FALSE(single(f.pods, "a", "metadata.name!=p1"));
  for (const char* bad : {"metadata.name=", "metadata.name=.", "metadata.name=..", "metadata.name=a/b",
                          "metadata.name=a%25b"}) {
    CAPTURE(bad);
    CHECK_FALSE(single(f.pods, "a", bad));
  }
  // MatchesSingle is off for continuations.
  CHECK_FALSE(single(f.pods, "a", "metadata.name=p1", encodeContinue(5, std::string("/p0\0", 4))));
}

}  // namespace testapi
