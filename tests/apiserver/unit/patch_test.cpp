#include <doctest/doctest.h>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "tests/apiserver/semantics.h"
#include "test_util.h"

using namespace testapi;
using namespace testapi::test;

namespace {

const ResourceDef kConfigMaps = coreDef("configmaps", "ConfigMap");
const ResourceDef kPods = coreDef("pods", "Pod");
const ResourceDef kServices = coreDef("services", "Service");

ResourceDef widgets() {
  ResourceDef d = groupDef("example.com", "widgets", "Widget");
  d.builtin = false;
  return d;
}

std::string toJson(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return buf.GetString();
}

Result<bool> patchResult(const ResourceDef& def, std::string_view type, const char* original, std::string_view patch,
                         rapidjson::Document& out) {
  rapidjson::Document orig;
  orig.Parse(original);
  REQUIRE_FALSE(orig.HasParseError());
  return applyPatch(def, type, orig, patch, out);
}

std::string patched(const ResourceDef& def, std::string_view type, const char* original, std::string_view patch) {
  rapidjson::Document out;
  auto r = patchResult(def, type, original, patch, out);
  valueOf(r);
  return toJson(out);
}

ApiError patchError(const ResourceDef& def, std::string_view type, const char* original, std::string_view patch) {
  rapidjson::Document out;
  auto r = patchResult(def, type, original, patch, out);
  return errorOf(r);
}

constexpr std::string_view kMerge = "application/merge-patch+json";
constexpr std::string_view kJson = "application/json-patch+json";
constexpr std::string_view kSmp = "application/strategic-merge-patch+json";
constexpr std::string_view kApply = "application/apply-patch+yaml";

const char* kCm = R"J({"metadata":{"name":"cfg","namespace":"d","resourceVersion":"5","labels":{"a":"1","b":"2"}},"data":{"k":"v","x":"y"}})J";

}  // namespace

TEST_CASE("Merge patch merges objects, deletes with null and replaces everything else (RFC 7386)") {
  CHECK(patched(kConfigMaps, kMerge, kCm, R"J({"data":{"k":"new","x":null,"z":"1"},"metadata":{"labels":{"b":null}}})J") ==
        R"J({"metadata":{"name":"cfg","namespace":"d","resourceVersion":"5","labels":{"a":"1"}},"data":{"k":"new","z":"1"}})J");
  CHECK(patched(kConfigMaps, kMerge, R"J({"a":[1,2],"b":{"c":1}})J", R"J({"a":[3],"b":"s"})J") == R"J({"a":[3],"b":"s"})J");
  CHECK(patched(kConfigMaps, kMerge, R"J({"a":1})J", R"J({"n":{"x":null,"y":{"z":null,"w":1}}})J") ==
        R"J({"a":1,"n":{"y":{"w":1}}})J");
  CHECK(patched(kConfigMaps, "application/merge-patch+json; charset=utf-8", R"J({"a":1})J", R"J({"b":2})J") ==
        R"J({"a":1,"b":2})J");
}

TEST_CASE("A resourceVersion in a patch is kept in the result for the caller's precondition check") {
  CHECK(patched(kConfigMaps, kMerge, kCm, R"J({"metadata":{"resourceVersion":"4"}})J").find(R"J("resourceVersion":"4")J") !=
        std::string::npos);
}

TEST_CASE("A malformed merge patch is a 400 Invalid JSON Patch") {
  auto e = patchError(kConfigMaps, kMerge, kCm, "{nope");
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Invalid JSON Patch","reason":"BadRequest","code":400})J");
  CHECK(patchError(kConfigMaps, kMerge, kCm, "null").message == "Invalid JSON Patch");
}

TEST_CASE("JSON patch applies add, remove, replace, move, copy and test in order (RFC 6902)") {
  CHECK(patched(kConfigMaps, kJson, R"J({"a":{"b":1},"l":[1,2,3]})J",
                R"J([{"op":"add","path":"/a/c","value":2},{"op":"remove","path":"/a/b"},
                     {"op":"replace","path":"/l/0","value":9},{"op":"add","path":"/l/-","value":4},
                     {"op":"add","path":"/l/1","value":7},{"op":"move","from":"/a/c","path":"/m"},
                     {"op":"copy","from":"/l","path":"/a/l"},{"op":"test","path":"/m","value":2}])J") ==
        R"J({"a":{"l":[9,7,2,3,4]},"l":[9,7,2,3,4],"m":2})J");
  CHECK(patched(kConfigMaps, kJson, R"J({"a~b":{"c/d":1}})J", R"J([{"op":"replace","path":"/a~0b/c~1d","value":2}])J") ==
        R"J({"a~b":{"c/d":2}})J");
  CHECK(patched(kConfigMaps, kJson, R"J({"l":[1,2,3]})J", R"J([{"op":"remove","path":"/l/-1"}])J") == R"J({"l":[1,2]})J");
}

TEST_CASE("JSON patch replace of a missing object key adds it, as the apiserver's library does") {
  CHECK(patched(kConfigMaps, kJson, R"J({"a":{}})J", R"J([{"op":"replace","path":"/a/b","value":1}])J") ==
        R"J({"a":{"b":1}})J");
}

TEST_CASE("JSON patch failures are 422 with the library's text as the cause") {
  auto e = patchError(kConfigMaps, kJson, R"J({"a":1})J", R"J([{"op":"test","path":"/a","value":2}])J");
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server rejected our request due to an error in our request","reason":"Invalid","details":{"causes":[{"reason":"UnexpectedServerResponse","message":"testing value /a failed: test failed"}]},"code":422})J");
  auto cause = [&](const char* orig, const char* patch) {
    auto err = patchError(kConfigMaps, kJson, orig, patch);
    CHECK(err.code == 422);
    REQUIRE(err.causes.size() == 1);
    return err.causes[0].message;
  };
  CHECK(cause(R"J({})J", R"J([{"op":"add","path":"/x/y","value":1}])J") ==
        "add operation does not apply: doc is missing path: \"/x/y\": missing value");
  CHECK(cause(R"J({})J", R"J([{"op":"remove","path":"/x"}])J") ==
        "error in remove for path: '/x': Unable to remove nonexistent key: x: missing value");
  CHECK(cause(R"J({})J", R"J([{"op":"remove","path":"/x/y"}])J") ==
        "remove operation does not apply: doc is missing path: \"/x/y\": missing value");
  CHECK(cause(R"J({})J", R"J([{"op":"replace","path":"/x/y","value":1}])J") ==
        "replace operation does not apply: doc is missing path: /x/y: missing value");
  CHECK(cause(R"J({"l":[1]})J", R"J([{"op":"replace","path":"/l/5","value":1}])J") ==
        "replace operation does not apply: doc is missing key: /l/5: missing value");
  CHECK(cause(R"J({"l":[1]})J", R"J([{"op":"add","path":"/l/5","value":1}])J") ==
        "error in add for path: '/l/5': Unable to access invalid index: 5: invalid index referenced");
  CHECK(cause(R"J({})J", R"J([{"op":"move","from":"/x/y","path":"/z"}])J") ==
        "move operation does not apply: doc is missing from path: /x/y: missing value");
  CHECK(cause(R"J({})J", R"J([{"op":"copy","from":"/x/y","path":"/z"}])J") ==
        "copy operation does not apply: doc is missing from path: /x/y: missing value");
  CHECK(cause(R"J({"a":1})J", R"J([{"op":"test","path":"/q/r","value":1}])J") ==
        "test operation does not apply: is missing path: /q/r: missing value");
  CHECK(cause(R"J({})J", R"J([{"op":"frobnicate","path":"/a"}])J") == "Unexpected kind: frobnicate");
  CHECK(cause(R"J({})J", R"J([{"path":"/a"}])J") == "Unexpected kind: unknown");
  CHECK(cause(R"J({})J", R"J([{"op":"add","value":1}])J") == "add operation failed to decode path: missing value");
}

TEST_CASE("A JSON patch that is not a list of operations is a 400") {
  CHECK(patchError(kConfigMaps, kJson, kCm, R"J({"op":"add"})J").message ==
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  CHECK(patchError(kConfigMaps, kJson, kCm, "[").message == "unexpected end of JSON input");
  CHECK(patchError(kConfigMaps, kJson, kCm, "x").message == "invalid character 'x' looking for beginning of value");
}

TEST_CASE("Strategic merge patch merges containers, env and container ports by key") {
  const char* pod = R"J({"metadata":{"name":"p","finalizers":["a"]},"spec":{"containers":[
      {"name":"app","image":"app:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
       "ports":[{"containerPort":80,"protocol":"TCP"}]},
      {"name":"side","image":"side:1"}],"tolerations":[{"key":"k"}]}})J";
  CHECK(patched(kPods, kSmp, pod,
                R"J({"metadata":{"finalizers":["b"]},"spec":{"containers":[{"name":"app","image":"app:2",
                    "env":[{"name":"B","value":"3"},{"name":"C","value":"4"}],"ports":[{"containerPort":80,"name":"http"}]}],
                    "tolerations":[{"key":"j"}]}})J") ==
        R"J({"metadata":{"name":"p","finalizers":["a","b"]},"spec":{"containers":[{"name":"app","image":"app:2","env":[{"name":"A","value":"1"},{"name":"B","value":"3"},{"name":"C","value":"4"}],"ports":[{"containerPort":80,"protocol":"TCP","name":"http"}]},{"name":"side","image":"side:1"}],"tolerations":[{"key":"j"}]}})J");
}

TEST_CASE("Strategic merge patch honours $patch delete and replace, $retainKeys and $deleteFromPrimitiveList") {
  const char* pod = R"J({"metadata":{"name":"p","finalizers":["a","b"]},"spec":{"volumes":[{"name":"v1","emptyDir":{}},{"name":"v2","emptyDir":{}}],
      "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"nodeSelector":{"a":"1","b":"2"}}})J";
  CHECK(patched(kPods, kSmp, pod, R"J({"spec":{"volumes":[{"name":"v1","$patch":"delete"}]}})J") ==
        R"J({"metadata":{"name":"p","finalizers":["a","b"]},"spec":{"volumes":[{"name":"v2","emptyDir":{}}],"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"nodeSelector":{"a":"1","b":"2"}}})J");
  CHECK(patched(kPods, kSmp, pod, R"J({"spec":{"nodeSelector":{"$patch":"replace","c":"3"}}})J").find(
            R"J("nodeSelector":{"c":"3"})J") != std::string::npos);
  CHECK(patched(kPods, kSmp, pod, R"J({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}})J").find(
            R"J("strategy":{"type":"Recreate"})J") != std::string::npos);
  CHECK(patched(kPods, kSmp, pod, R"J({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}})J").find(
            R"J("finalizers":["b"])J") != std::string::npos);
  CHECK(patched(kPods, kSmp, pod, R"J({"spec":{"volumes":[{"$patch":"replace"},{"name":"v3"}]}})J").find(
            R"J("volumes":[{"name":"v3"}])J") != std::string::npos);
}

TEST_CASE("Strategic merge patch follows $setElementOrder and replaces unknown lists") {
  const char* pod = R"J({"spec":{"containers":[{"name":"a"},{"name":"b"}],"args":["x","y"]}})J";
  CHECK(patched(kPods, kSmp, pod,
                R"J({"$setElementOrder/containers":[{"name":"c"},{"name":"b"},{"name":"a"}],"spec":{"containers":[{"name":"c"}],"$setElementOrder/containers":[{"name":"c"},{"name":"b"},{"name":"a"}],"args":["z"]}})J") ==
        R"J({"spec":{"containers":[{"name":"c"},{"name":"b"},{"name":"a"}],"args":["z"]}})J");
}

TEST_CASE("Service ports merge on port") {
  const char* svc = R"J({"spec":{"ports":[{"port":80,"targetPort":8080},{"port":443}]}})J";
  CHECK(patched(kServices, kSmp, svc, R"J({"spec":{"ports":[{"port":80,"targetPort":9090}]}})J") ==
        R"J({"spec":{"ports":[{"port":80,"targetPort":9090},{"port":443}]}})J");
}

TEST_CASE("Custom resources do not accept strategic merge patch (415)") {
  auto e = patchError(widgets(), kSmp, R"J({})J", "{}");
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml","reason":"UnsupportedMediaType","code":415})J");
}

TEST_CASE("An unknown patch content type is a 415 listing the built-in patch types") {
  auto e = patchError(kConfigMaps, "application/json", kCm, "{}");
  CHECK(e.code == 415);
  CHECK(e.message ==
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, "
        "application/apply-patch+yaml");
}

TEST_CASE("A malformed strategic merge patch is a 400 with the JSON decoder's text") {
  CHECK(patchError(kConfigMaps, kSmp, kCm, "{\"a\" 1}").message == "invalid character '1' after object key");
  CHECK(patchError(kConfigMaps, kSmp, kCm, "[1]").message ==
        "json: cannot unmarshal array into Go value of type map[string]interface {}");
}

TEST_CASE("An apply patch merges the YAML configuration into the object") {
  CHECK(patched(kConfigMaps, kApply, kCm,
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: \"7\"\n  n: 8\n  t: true\n") ==
        R"J({"metadata":{"name":"cfg","namespace":"d","resourceVersion":"5","labels":{"a":"1","b":"2"}},"data":{"k":"7","x":"y","n":8,"t":true},"apiVersion":"v1","kind":"ConfigMap"})J");
  CHECK(patchError(kConfigMaps, kApply, kCm, "- a\n- b\n").code == 400);
  CHECK(patchError(kConfigMaps, kApply, kCm, "a: [\n").code == 400);
}
