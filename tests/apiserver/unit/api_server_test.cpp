// ApiServer request handling without sockets (api_fixture.h). Covers the RV rules of
// LIST and the WATCH stream shapes.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "api_fixture.h"

namespace testapi {

using test::Fixture;
using test::FakeStream;
using test::parse;

TEST_CASE("LIST with resourceVersion=0 ignores limit; with RV unset it paginates (P1, P5)") {
  Fixture f;
  for (int i = 0; i < 3; ++i) f.configMap("c" + std::to_string(i));
  auto any = parse(f.call("GET", "/api/v1/namespaces/default/configmaps?limit=1&resourceVersion=0").body);
  CHECK(any["items"].Size() == 3);
  CHECK_FALSE(any["metadata"].HasMember("continue"));
  auto paged = parse(f.call("GET", "/api/v1/namespaces/default/configmaps?limit=1").body);
  CHECK(paged["items"].Size() == 1);
  CHECK(paged["metadata"]["remainingItemCount"].GetInt() == 2);
}

TEST_CASE("An Exact LIST below the compacted RV is 410 with the etcd text (R8)") {
  Fixture f;
  f.configMap("a");
  uint64_t old = f.storage.currentRv();
  f.configMap("b");
  f.storage.compact();
  auto r = f.call("GET", "/api/v1/namespaces/default/configmaps?resourceVersion=" + std::to_string(old) +
                             "&resourceVersionMatch=Exact");
  CHECK(r.status == 410);
  CHECK(parse(r.body)["message"] == "The resourceVersion for the provided list is too old.");
}

TEST_CASE("A continuation of a compacted snapshot is 410 with an rv:-1 token (P7)") {
  Fixture f;
  for (int i = 0; i < 3; ++i) f.configMap("c" + std::to_string(i));
  auto first = parse(f.call("GET", "/api/v1/namespaces/default/configmaps?limit=1").body);
  std::string token = first["metadata"]["continue"].GetString();
  CHECK(token == encodeContinue(std::stoll(first["metadata"]["resourceVersion"].GetString()), std::string("/c0\0", 4)));
  f.configMap("later");
  f.storage.compact();
  auto r = f.call("GET", "/api/v1/namespaces/default/configmaps?limit=1&continue=" + token);
  CHECK(r.status == 410);
  auto st = parse(r.body);
  auto fresh = std::get<ContinueToken>(decodeContinue(st["metadata"]["continue"].GetString()));
  CHECK(fresh.rv == -1);
  CHECK(fresh.start == std::string("c0\0", 3));
  // etcd writes this one: relative to its prepared prefix, so without the leading '/'.
  CHECK(std::string(st["metadata"]["continue"].GetString()) == encodeContinue(-1, std::string("c0\0", 3)));
  // The rv:-1 token continues at the latest RV.
  auto next = parse(f.call("GET", "/api/v1/namespaces/default/configmaps?limit=10&continue=" +
                                      std::string(st["metadata"]["continue"].GetString())).body);
  CHECK(next["items"].Size() == 3);
}

TEST_CASE("A future RV on LIST waits and then answers 504 with Retry-After (R7)") {
  Fixture f;
  auto r = f.call("GET", "/api/v1/namespaces/default/configmaps?resourceVersion=999999");
  CHECK(r.status == 504);
  bool retry_after = false;
  for (auto& [k, v] : r.headers) retry_after |= (k == "Retry-After" && v == "1");
  CHECK(retry_after);
}

TEST_CASE("A defaulted watch with bookmarks streams initial ADDED events then the end bookmark (W4, W9)") {
  Fixture f;
  f.configMap("a");
  FakeStream out;
  f.api.handle(Fixture::request("GET", "/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=1"), out);
  auto body = out.response().body;
  auto added = body.find(R"({"type":"ADDED")");
  auto bookmark = body.find(R"("k8s.io/initial-events-end":"true")");
  CHECK(added != std::string::npos);
  CHECK(bookmark != std::string::npos);
  CHECK(added < bookmark);
}

TEST_CASE("A label change out of a watch's selector is DELETED with the previous object at the new RV (W10)") {
  Fixture f;
  f.configMap("a", R"({"app":"web"})");
  const uint64_t from = f.storage.currentRv();
  FakeStream out;
  std::jthread watcher([&] {
    f.api.handle(Fixture::request("GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=2&labelSelector=app%3Dweb"
                                         "&resourceVersion=" + std::to_string(from)),
                 out);
  });
  auto r = f.call("PATCH", "/api/v1/namespaces/default/configmaps/a", R"({"metadata":{"labels":{"app":"db"}}})",
                  "application/merge-patch+json");
  REQUIRE(r.status == 200);
  const std::string rv = std::to_string(f.storage.currentRv());
  REQUIRE(out.waitFor(R"({"type":"DELETED")"));
  auto body = out.response().body;
  auto line = parse(body.substr(0, body.find('\n')));
  CHECK(line["object"]["metadata"]["labels"]["app"] == "web");
  CHECK(line["object"]["metadata"]["resourceVersion"] == rv.c_str());
}

TEST_CASE("A watch from a compacted RV is a 200 stream with one Expired ERROR event (W5)") {
  Fixture f;
  f.configMap("a");
  const uint64_t old = f.storage.currentRv();
  f.configMap("b");
  f.storage.compact();
  auto r = f.call("GET", "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + std::to_string(old));
  CHECK(r.status == 200);
  auto ev = parse(r.body.substr(0, r.body.find('\n')));
  CHECK(ev["type"] == "ERROR");
  CHECK(ev["object"]["code"].GetInt() == 410);
  CHECK(std::string(ev["object"]["message"].GetString()) ==
        "too old resource version: " + std::to_string(old) + " (" + std::to_string(f.storage.compactedRv()) + ")");
}

TEST_CASE("Finalizers keep a deleted object with a deletionTimestamp until they are removed (X1)") {
  Fixture f;
  auto created = f.call("POST", "/api/v1/namespaces/default/configmaps",
                        R"({"metadata":{"name":"held","finalizers":["example.com/keep"]}})");
  REQUIRE(created.status == 201);
  auto del = f.call("DELETE", "/api/v1/namespaces/default/configmaps/held");
  CHECK(del.status == 200);
  CHECK(parse(del.body)["metadata"].HasMember("deletionTimestamp"));
  CHECK(f.call("GET", "/api/v1/namespaces/default/configmaps/held").status == 200);
  auto patched = f.call("PATCH", "/api/v1/namespaces/default/configmaps/held", R"({"metadata":{"finalizers":null}})",
                        "application/merge-patch+json");
  CHECK(patched.status == 200);
  CHECK(f.call("GET", "/api/v1/namespaces/default/configmaps/held").status == 404);
}

TEST_CASE("The status subresource changes only status; the main resource ignores status") {
  Fixture f;
  auto created = f.call("POST", "/apis/example.com/v1/namespaces/default/widgets",
                        R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}})");
  REQUIRE(created.status == 201);
  auto st = f.call("PATCH", "/apis/example.com/v1/namespaces/default/widgets/w/status",
                   R"({"spec":{"color":"blue"},"status":{"ready":true}})", "application/merge-patch+json");
  REQUIRE(st.status == 200);
  auto w = parse(st.body);
  CHECK(w["spec"]["color"] == "red");
  CHECK(w["status"]["ready"].GetBool());
  auto main = parse(f.call("PATCH", "/apis/example.com/v1/namespaces/default/widgets/w",
                           R"({"spec":{"color":"green"},"status":{"ready":false}})", "application/merge-patch+json").body);
  CHECK(main["spec"]["color"] == "green");
  CHECK(main["status"]["ready"].GetBool());
  CHECK(main["metadata"]["generation"].GetInt() == 2);
}

TEST_CASE("With a bad selector and a bad RV or continue token, LIST reports the selector (S2, S5 before R5, R6, P3)") {
  Fixture f;
  const std::string token = encodeContinue(5, "a");
  const std::vector<std::string> storage_errors = {"resourceVersion=abc", "continue=%21%21",
                                                   "continue=" + token + "&resourceVersion=5"};
  for (const std::string& storage_error : storage_errors) {
    CAPTURE(storage_error);
    auto label = f.call("GET", "/api/v1/pods?labelSelector=a%20b&" + storage_error);
    CHECK(label.status == 400);
    CHECK(std::string(parse(label.body)["message"].GetString()).find("unable to parse requirement") != std::string::npos);
    auto field = f.call("GET", "/api/v1/pods?fieldSelector=spec.bogus%3D1&" + storage_error);
    CHECK(field.status == 400);
    CHECK(std::string(parse(field.body)["message"].GetString()) == "field label not supported: spec.bogus");
    // Alone, the storage error is what the client gets.
    auto alone = f.call("GET", "/api/v1/pods?" + storage_error);
    CHECK(alone.status == 400);
    CHECK(std::string(parse(alone.body)["message"].GetString()).find("field label") == std::string::npos);
  }
}

TEST_CASE("JSON bodies end with exactly one newline, as Go's json.Encoder writes them; /version does not") {
  Fixture f;
  f.configMap("c0");
  for (const char* target : {"/api/v1/namespaces/default/configmaps/c0", "/api/v1/namespaces/default/configmaps",
                                   "/api/v1/namespaces/default/configmaps/nope", "/api/v1/pods?resourceVersion=abc",
                                   "/api", "/apis", "/api/v1"}) {
    CAPTURE(target);
    const std::string body = f.call("GET", target).body;
    REQUIRE(body.size() > 2);
    CHECK(body.back() == '\n');
    CHECK(body[body.size() - 2] != '\n');
  }
  CHECK(f.call("GET", "/version").body.back() == '}');
}

TEST_CASE("An empty PartialObjectMetadataList has null items; an empty PodList keeps [] (N4, L1)") {
  Fixture f;
  const std::string pom = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
  const std::string rv = std::to_string(f.storage.currentRv());
  auto empty = f.get("/api/v1/namespaces/default/configmaps", pom);
  CHECK(empty.status == 200);
  CHECK(empty.body == R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":")" +
                          rv + R"("},"items":null})" + "\n");
  // Also when a selector (or an Exact read, etcd's path) finds nothing.
  CHECK(parse(f.get("/api/v1/pods?labelSelector=app%3Dnone", pom).body)["items"].IsNull());
  CHECK(parse(f.get("/api/v1/namespaces/default/configmaps?resourceVersion=" + rv + "&resourceVersionMatch=Exact", pom)
                  .body)["items"].IsNull());
  CHECK(parse(f.call("GET", "/api/v1/namespaces/default/configmaps").body)["items"].IsArray());
  f.configMap("c0");
  auto one = parse(f.get("/api/v1/namespaces/default/configmaps", pom).body);
  REQUIRE(one["items"].IsArray());
  CHECK(one["items"].Size() == 1);
}

}  // namespace testapi
