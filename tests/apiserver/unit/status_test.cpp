#include <doctest/doctest.h>

#include "tests/apiserver/semantics.h"
#include "tests/apiserver/status/status_util.h"
#include "test_util.h"

using namespace testapi;
using namespace testapi::test;

TEST_CASE("A NotFound Status for a core resource names the plural resource and omits the group (E1, R10)") {
  auto e = notFound(coreDef("pods", "Pod"), "nope");
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404})J");
}

TEST_CASE("A NotFound Status for a grouped resource qualifies the resource with its group (R10)") {
  auto e = notFound(groupDef("apps", "deployments", "Deployment"), "nope");
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"nope\" not found","reason":"NotFound","details":{"name":"nope","group":"apps","kind":"deployments"},"code":404})J");
}

TEST_CASE("Conflict and AlreadyExists carry the apiserver's texts (X2)") {
  CHECK(conflict(coreDef("configmaps", "ConfigMap"), "cfg").toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on configmaps \"cfg\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"cfg","kind":"configmaps"},"code":409})J");
  CHECK(conflict(groupDef("apps", "deployments", "Deployment"), "x").toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on deployments.apps \"x\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"x","group":"apps","kind":"deployments"},"code":409})J");
  CHECK(alreadyExists(coreDef("configmaps", "ConfigMap"), "cfg").toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"cfg\" already exists","reason":"AlreadyExists","details":{"name":"cfg","kind":"configmaps"},"code":409})J");
}

TEST_CASE("Too large resource version is a 504 with a cause and retryAfterSeconds 1 (R7)") {
  auto e = tooLargeResourceVersion(99999, 12500);
  CHECK(e.retry_after_seconds == 1);
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 99999, current: 12500","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504})J");
}

TEST_CASE("Expired list and watch Statuses carry the etcd and watch cache texts (R8, W5)") {
  CHECK(expiredList().toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"The resourceVersion for the provided list is too old.","reason":"Expired","code":410})J");
  CHECK(expiredWatch(9000, 11874).toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 9000 (11874)","reason":"Expired","code":410})J");
}

TEST_CASE("An expired continuation carries a fresh token in metadata.continue (P7)") {
  auto e = expiredContinue("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiZGVmYXVsdC9uZ2lueC0xXHUwMDAwIn0");
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{"continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiZGVmYXVsdC9uZ2lueC0xXHUwMDAwIn0"},"status":"Failure","message":"The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.","reason":"Expired","code":410})J");
  CHECK(expiredContinue("").message ==
        "The provided continue parameter is too old to display a consistent list result. You can start a new list "
        "without the continue parameter.");
}

TEST_CASE("NotAcceptable and UnsupportedMediaType list the accepted media types (E2, N1)") {
  CHECK(notAcceptable("application/json, application/yaml, application/vnd.kubernetes.protobuf").toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf","reason":"NotAcceptable","code":406})J");
  auto e = unsupportedMediaType("application/json, application/yaml");
  CHECK(e.code == 415);
  CHECK(e.reason == "UnsupportedMediaType");
  CHECK(e.message ==
        "the body of the request was in an unknown format - accepted media types include: application/json, "
        "application/yaml");
}

TEST_CASE("A Status without reason and details omits both, as for plain 500s (E1)") {
  ApiError e;
  e.code = 500;
  e.message = "boom";
  CHECK(e.toJson() == R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"boom","code":500})J");
}

TEST_CASE("Status strings are escaped the way Go's encoder escapes them (E1)") {
  CHECK(badRequest("a <nil> & \"q\"\n\x01").toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"a \u003cnil\u003e \u0026 \"q\"\n\u0001","reason":"BadRequest","code":400})J");
  CHECK(jsonString("\xff\xe2\x80\xa8é") == "\"\\ufffd\\u2028é\"");
}

TEST_CASE("Go quoting escapes quotes, backslashes and control bytes") {
  CHECK(goQuote("a\"b\\c\td") == R"J("a\"b\\c\td")J");
  CHECK(goQuote(std::string("\x00\x7f", 2)) == R"J("\x00\x7f")J");
}

TEST_CASE("Invalid aggregates several field errors in brackets and keeps one cause per error (R4)") {
  auto e = invalid("meta.k8s.io", "ListOptions", "",
                   {FieldError::forbidden("a", "x"), FieldError::invalid("b", "v", "bad"), FieldError::forbidden("a", "x")});
  CHECK(e.message == R"J(ListOptions.meta.k8s.io "" is invalid: [a: Forbidden: x, b: Invalid value: "v": bad])J");
  REQUIRE(e.causes.size() == 3);
  CHECK(e.causes[1].reason == "FieldValueInvalid");
  CHECK(e.causes[1].message == R"J(Invalid value: "v": bad)J");
  CHECK(e.causes[1].field == "b");
}
