// How custom resources (example.com/v1 widgets, served by the apiextensions server)
// come out in JSON, as kube-apiserver v1.37 writes them: the objects and their lists
// are unstructured maps (keys sorted at every level by encoding/json), while the
// PartialObjectMetadata and Table renderings of them are typed (ObjectMeta struct
// order).
#include <doctest/doctest.h>

#include <string>

#include "api_fixture.h"
#include "tests/apiserver/media/go_json.h"
#include "tests/apiserver/storage/object_codec.h"
#include "tests/apiserver/media/rendering.h"

namespace testapi {

using test::FakeStream;
using test::Fixture;
using test::parse;

namespace {

constexpr const char* kPom = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
constexpr const char* kPomList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
constexpr const char* kTable = "application/json;as=Table;g=meta.k8s.io;v=v1";
constexpr const char* kWidgets = "/apis/example.com/v1/namespaces/default/widgets";

// What the server generated for an object: uid, creationTimestamp, resourceVersion.
struct Generated {
  std::string uid, created, rv;
};
Generated generated(const std::string& body) {
  auto d = parse(body);
  REQUIRE(d.IsObject());
  const auto& m = d["metadata"];
  return {m["uid"].GetString(), m["creationTimestamp"].GetString(), m["resourceVersion"].GetString()};
}

std::string watchBody(Fixture& f, const std::string& target, const std::string& accept = "") {
  FakeStream out;
  HttpRequest req = Fixture::request("GET", target);
  if (!accept.empty()) req.headers["accept"] = accept;
  f.api.handle(req, out);
  return out.response().body;
}

std::string typedMeta(const std::string& meta_json) {
  auto d = parse(meta_json);
  std::string out;
  appendTypedObjectMeta(out, d);
  return out;
}

}  // namespace

TEST_CASE("A custom resource is stored as encoding/json writes a map: keys sorted at every level, Go strings and numbers") {
  auto catalog = ResourceCatalog::builtinDefault();
  const auto& widgets = *catalog.find("example.com", "v1", "widgets");
  rapidjson::Document d;
  d.Parse<rapidjson::kParseFullPrecisionFlag>(
      R"J({"spec":{"size":1,"color":"blue","list":[{"b":1,"a":{"d":1,"c":2}},3],"z":{"Z":1,"é":2,"a":3,"B":4}},)J"
      R"J("metadata":{"resourceVersion":"2","name":"w","namespace":"ns","labels":{"z":"1","a":"2"}},"kind":"Widget",)J"
      R"J("apiVersion":"example.com/v1","status":{"text":"a<b&c>\u2028","f1":1.0,"f2":1e3,"f3":1.5e-7,)J"
      R"J("f4":12345678901234567890,"f5":0.1,"f6":2.5e21,"f7":-0.0,"big":1e300,"dup":1,"dup":2}})J");
  REQUIRE_FALSE(d.HasParseError());
  // Byte for byte what json.NewEncoder(w).Encode writes for the map the apiserver
  // decodes this body into: arrays keep their order, keys compare byte-wise ("B" <
  // "Z" < "a" < "é"), the last of two equal keys wins, an integer literal beyond
  // int64 and every literal with a fraction or exponent is a float64. The one float
  // whose text changes when etcd's copy is read back, -0 (the integer 0 then), is
  // served as 0.
  const std::string want =
      R"J({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"labels":{"a":"2","z":"1"},"name":"w",)J"
      R"J("namespace":"ns","resourceVersion":"2"},"spec":{"color":"blue","list":[{"a":{"c":2,"d":1},"b":1},3],)J"
      R"J("size":1,"z":{"B":4,"Z":1,"a":3,"é":2}},"status":{"big":1e+300,"dup":2,"f1":1,"f2":1000,"f3":1.5e-7,)J"
      R"J("f4":12345678901234567000,"f5":0.1,"f6":2.5e+21,"f7":0,"text":"a\u003cb\u0026c\u003e\u2028"}})J";
  auto obj = makeStored(widgets, d);
  CHECK(obj->json == want);
  // Parsing the stored form and storing it again changes nothing.
  rapidjson::Document again;
  parseStored(*obj, again);
  CHECK(makeStored(widgets, again)->json == want);
  CHECK(obj->name == "w");
  CHECK(obj->labels.at("a") == "2");
}

TEST_CASE("Float64 values print Go's shortest digits, padded with zeros rather than exact") {
  std::string out;
  appendGoJson(out, rapidjson::Value(18446744073709551616.0));  // 2^64
  CHECK(out == "18446744073709552000");
  out.clear();
  appendGoJson(out, rapidjson::Value(123456.789));
  CHECK(out == "123456.789");
  out.clear();
  appendGoJson(out, rapidjson::Value(0.000001));
  CHECK(out == "0.000001");
  out.clear();
  appendGoJson(out, rapidjson::Value(1e21));
  CHECK(out == "1e+21");
}

TEST_CASE("A custom resource comes out sorted from POST, GET, LIST, WATCH and PATCH, whatever order it was sent in") {
  Fixture f;
  const std::string before = std::to_string(f.storage.currentRv());
  const std::string created = f.widget(
      R"({"spec":{"size":1,"color":"blue"},"metadata":{"name":"w0","labels":{"z":"1","a":"2"}},"kind":"Widget","apiVersion":"example.com/v1"})");
  const Generated g = generated(created);
  const std::string want = R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"creationTimestamp":")" +
                           g.created + R"(","generation":1,"labels":{"a":"2","z":"1"},"name":"w0","namespace":"default","resourceVersion":")" +
                           g.rv + R"(","uid":")" + g.uid + R"("},"spec":{"color":"blue","size":1}})";
  CHECK(created == want + "\n");
  CHECK(f.call("GET", std::string(kWidgets) + "/w0").body == want + "\n");
  CHECK(f.call("GET", kWidgets).body ==
        R"({"apiVersion":"example.com/v1","items":[)" + want + R"(],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":")" +
            g.rv + "\"}}\n");
  // A watch-list: the initial event, then the end bookmark, itself an Unstructured
  // (the cacher's newFunc), so its metadata keys are sorted too.
  CHECK(watchBody(f, std::string(kWidgets) +
                         "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1") ==
        R"({"type":"ADDED","object":)" + want + "}\n" +
            R"({"type":"BOOKMARK","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"k8s.io/initial-events-end":"true"},"resourceVersion":")" +
            g.rv + "\"}}}\n");
  CHECK(watchBody(f, std::string(kWidgets) + "?watch=1&timeoutSeconds=1&resourceVersion=" + before) ==
        R"({"type":"ADDED","object":)" + want + "}\n");

  auto patched = f.call("PATCH", std::string(kWidgets) + "/w0", R"({"spec":{"size":2},"metadata":{"annotations":{"y":"1","x":"2"}}})",
                        "application/merge-patch+json");
  REQUIRE(patched.status == 200);
  const std::string rv2 = generated(patched.body).rv;
  CHECK(patched.body == R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"x":"2","y":"1"},"creationTimestamp":")" +
                            g.created + R"(","generation":2,"labels":{"a":"2","z":"1"},"name":"w0","namespace":"default","resourceVersion":")" +
                            rv2 + R"(","uid":")" + g.uid + R"("},"spec":{"color":"blue","size":2}})" + "\n");
  auto status = f.call("PUT", std::string(kWidgets) + "/w0/status",
                       R"({"status":{"b":{"y":1,"x":2},"a":1.0},"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w0"}})");
  REQUIRE(status.status == 200);
  CHECK(status.body.find(R"(,"spec":{"color":"blue","size":2},"status":{"a":1,"b":{"x":2,"y":1}}})") != std::string::npos);
}

TEST_CASE("A custom resource LIST is an UnstructuredList: sorted keys, metadata.continue always present") {
  Fixture f;
  const std::string rv0 = std::to_string(f.storage.currentRv());
  CHECK(f.call("GET", kWidgets).body ==
        R"({"apiVersion":"example.com/v1","items":[],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":")" + rv0 + "\"}}\n");
  f.widget(R"({"metadata":{"name":"a"},"spec":{"size":1}})");
  f.widget(R"({"metadata":{"name":"b"},"spec":{"size":2}})");
  const std::string rv = std::to_string(f.storage.currentRv());

  const std::string first = f.call("GET", std::string(kWidgets) + "?limit=1").body;
  auto page = parse(first);
  REQUIRE(page["items"].Size() == 1);
  const std::string token = page["metadata"]["continue"].GetString();
  CHECK_FALSE(token.empty());
  CHECK(first.starts_with(R"({"apiVersion":"example.com/v1","items":[{"apiVersion":"example.com/v1","kind":"Widget",)"));
  CHECK(first.ends_with(R"(],"kind":"WidgetList","metadata":{"continue":")" + token +
                        R"(","remainingItemCount":1,"resourceVersion":")" + rv + "\"}}\n"));
  const std::string last = f.call("GET", std::string(kWidgets) + "?limit=1&continue=" + token).body;
  CHECK(last.ends_with(R"(],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":")" + rv + "\"}}\n"));
  // The reads etcd answers (an Exact RV, one object by name) and a DELETECOLLECTION's
  // answer are the same UnstructuredList.
  CHECK(f.call("GET", std::string(kWidgets) + "?resourceVersion=" + rv + "&resourceVersionMatch=Exact")
            .body.ends_with(R"(],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":")" + rv + "\"}}\n"));
  CHECK(f.call("GET", std::string(kWidgets) + "?fieldSelector=metadata.name%3Da&limit=1")
            .body.ends_with(R"(],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":")" + rv + "\"}}\n"));
  const std::string deleted = f.call("DELETE", std::string(kWidgets) + "?fieldSelector=metadata.name%3Db").body;
  CHECK(deleted.starts_with(R"({"apiVersion":"example.com/v1","items":[{"apiVersion":"example.com/v1","kind":"Widget",)"));
  CHECK(deleted.ends_with(R"(],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":")" +
                          std::to_string(f.storage.currentRv()) + "\"}}\n"));

  // Built-in lists keep ListMeta's struct order and omit an empty continue.
  f.configMap("c0");
  CHECK(f.call("GET", "/api/v1/namespaces/default/configmaps")
            .body.starts_with(R"({"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":")" +
                              std::to_string(f.storage.currentRv()) + R"("},"items":[{"metadata":)"));
}

TEST_CASE("PartialObjectMetadata and Table rows of a custom resource are typed: ObjectMeta in struct order (N3, N4)") {
  Fixture f;
  const std::string before = std::to_string(f.storage.currentRv());
  const std::string created = f.widget(
      R"({"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":1,"color":"blue"},"metadata":{)"
      R"("managedFields":[{"time":"2026-01-02T03:04:05Z","fieldsV1":{"f:spec":{"f:color":{},".":{}}},"subresource":"","fieldsType":"FieldsV1","apiVersion":"example.com/v1","operation":"Update","manager":"x"}],)"
      R"("finalizers":["example.com/f"],"ownerReferences":[{"uid":"1234","kind":"ConfigMap","controller":true,"name":"cm","blockOwnerDeletion":true,"apiVersion":"v1"}],)"
      R"("annotations":{"y":"1","x":"2"},"labels":{"z":"1","a":"2","B":"3"},"name":"w1"}})");
  const Generated g = generated(created);
  // The stored object is a sorted map throughout, managedFields entries included.
  CHECK(created.find(R"("managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:color":{}}},"manager":"x","operation":"Update","subresource":"","time":"2026-01-02T03:04:05Z"}],"name":"w1","namespace":"default","ownerReferences":[{"apiVersion":"v1","blockOwnerDeletion":true,"controller":true,"kind":"ConfigMap","name":"cm","uid":"1234"}],)") !=
        std::string::npos);

  const std::string meta = R"({"name":"w1","namespace":"default","uid":")" + g.uid + R"(","resourceVersion":")" + g.rv +
                           R"(","generation":1,"creationTimestamp":")" + g.created +
                           R"(","labels":{"B":"3","a":"2","z":"1"},"annotations":{"x":"2","y":"1"},)"
                           R"("ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"cm","uid":"1234","controller":true,"blockOwnerDeletion":true}],)"
                           R"("finalizers":["example.com/f"],)"
                           R"("managedFields":[{"manager":"x","operation":"Update","apiVersion":"example.com/v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:color":{}}}}]})";
  const std::string pom = R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)" + meta + "}";
  CHECK(f.get(std::string(kWidgets) + "/w1", kPom).body == pom + "\n");
  CHECK(f.get(kWidgets, kPomList).body ==
        R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":")" + g.rv +
            R"("},"items":[)" + pom + "]}\n");
  CHECK(watchBody(f, std::string(kWidgets) + "?watch=1&timeoutSeconds=1&resourceVersion=" + before, kPom) ==
        R"({"type":"ADDED","object":)" + pom + "}\n");
  // Its bookmark is a PartialObjectMetadata too: resourceVersion before annotations.
  CHECK(watchBody(f, std::string(kWidgets) + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=1", kPom)
            .ends_with(R"({"type":"BOOKMARK","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":")" +
                       g.rv + R"(","annotations":{"k8s.io/initial-events-end":"true"}}}})" + "\n"));

  // Table rows carry PartialObjectMetadata by default, the unstructured object itself
  // for includeObject=Object.
  const std::string table = f.get(kWidgets, kTable).body;
  CHECK(table.ends_with(R"(,"object":)" + pom + "}]}\n"));
  const std::string with_object = f.get(std::string(kWidgets) + "?includeObject=Object", kTable).body;
  CHECK(with_object.ends_with(R"(,"object":)" + created.substr(0, created.size() - 1) + "}]}\n"));
}

TEST_CASE("Typed ObjectMeta drops empty and unknown fields as the struct's omitempty tags do (N4)") {
  // Fields in any order, empty ones, a field ObjectMeta does not have.
  CHECK(typedMeta(R"({"zzz":1,"finalizers":[],"labels":{},"annotations":{"b":"1","a":null},"generation":0,)"
                  R"("deletionGracePeriodSeconds":0,"deletionTimestamp":"2026-01-01T00:00:00Z","generateName":"",)"
                  R"("ownerReferences":[{"name":"o","controller":"yes"}],"name":"n"})") ==
        R"({"name":"n","deletionTimestamp":"2026-01-01T00:00:00Z","deletionGracePeriodSeconds":0,"annotations":{"a":"","b":"1"},)"
        R"("ownerReferences":[{"apiVersion":"","kind":"","name":"o","uid":""}]})");
  // A map with a non-string value, a list with an element of the wrong type: the
  // unstructured getters read nothing.
  CHECK(typedMeta(R"({"labels":{"a":1},"finalizers":["f",2],"managedFields":[{"manager":"m"},3],"name":"n"})") ==
        R"({"name":"n"})");
  CHECK(typedMeta(R"({"managedFields":[{"subresource":"status","fieldsV1":null,"fieldsType":"","manager":"m"}]})") ==
        R"({"managedFields":[{"manager":"m","subresource":"status"}]})");
  CHECK(typedMeta("{}") == "{}");
  // Times are metav1.Time: parsed as RFC 3339, written in UTC to the second. A
  // timestamp that does not parse reads as the zero time, which both fields omit; a
  // managedFields entry whose time does not parse fails the conversion of them all.
  CHECK(typedMeta(R"({"creationTimestamp":"2026-01-01T00:30:00.25+01:00","deletionTimestamp":"yesterday"})") ==
        R"({"creationTimestamp":"2025-12-31T23:30:00Z"})");
  CHECK(typedMeta(R"({"creationTimestamp":"0001-01-01T00:00:00Z","managedFields":[{"manager":"m","time":"0001-01-01T00:00:00Z"}]})") ==
        R"({"managedFields":[{"manager":"m","time":null}]})");
  CHECK(typedMeta(R"({"name":"n","managedFields":[{"manager":"a"},{"manager":"m","time":""}]})") == R"({"name":"n"})");
}

}  // namespace testapi
