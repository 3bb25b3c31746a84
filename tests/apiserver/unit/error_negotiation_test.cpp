// Errors for an Accept header that only asks for conversions: ErrorNegotiated cannot
// negotiate them under DefaultEndpointRestrictions, so WriteObjectNegotiated falls
// back to WriteRawJSON (json.MarshalIndent, no trailing newline).
#include <doctest/doctest.h>

#include "api_fixture.h"
#include "tests/apiserver/media/go_json.h"
#include "tests/apiserver/media/media.h"

namespace testapi {

using test::Fixture;
using test::hasHeader;

namespace {
const std::string kPomList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
}

TEST_CASE("An error is negotiable for plain JSON, YAML, protobuf and wildcards, not for conversions") {
  for (const char* accept : {"", "application/json", "*/*", "*", "application/*", "application/yaml",
                             "application/vnd.kubernetes.protobuf", "application/json;stream=watch",
                             "application/vnd.kubernetes.protobuf;stream=watch", "application/json;q=0",
                             "application/json;pretty=1;foo=bar", " application/json ",
                             // one acceptable clause is enough, in any position
                             "application/json;as=Table;g=meta.k8s.io;v=v1,application/json",
                             "text/html,application/json",
                             // "k" and "k=" and "k=v=w" carry no parameter in goautoneg
                             "application/json;as", "application/json;as=", "application/json;as=a=b",
                             "application/json;sv=", "application/json;stream="}) {
    CAPTURE(accept);
    CHECK(errorMediaTypeNegotiable(accept));
  }
  for (const char* accept : {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                             "application/json;as=Table;g=meta.k8s.io;v=v1", "application/json;g=meta.k8s.io",
                             "application/json;v=v1", "*/*;as=Table",
                             "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                             "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                             "application/yaml;stream=watch", "application/json;stream=other", "application/json;sv=v1",
                             "text/html", "application/cbor", "application", "*/json", "application/json/x",
                             "Application/JSON", "\tapplication/json", ","}) {
    CAPTURE(accept);
    CHECK_FALSE(errorMediaTypeNegotiable(accept));
  }
}

TEST_CASE("indentJson lays compact JSON out as json.MarshalIndent does") {
  CHECK(indentJson(R"({"a":1,"b":{},"c":[],"d":[{"e":"x,:{}[]\"y"}],"f":"\u003c"})") ==
        "{\n  \"a\": 1,\n  \"b\": {},\n  \"c\": [],\n  \"d\": [\n    {\n      \"e\": \"x,:{}[]\\\"y\"\n    }\n  ],\n"
        "  \"f\": \"\\u003c\"\n}");
}

TEST_CASE("An error for a conversion-only Accept is indented raw JSON with the error's code") {
  Fixture f;
  const std::string current = std::to_string(f.storage.currentRv());
  auto r = f.get("/api/v1/namespaces/default/configmaps?resourceVersion=999999", kPomList);
  CHECK(r.status == 504);
  CHECK(r.content_type == "application/json");
  CHECK(hasHeader(r, "Retry-After"));  // set by ErrorNegotiated before it negotiates
  CHECK(r.body == R"({
  "kind": "Status",
  "apiVersion": "v1",
  "metadata": {},
  "status": "Failure",
  "message": "Timeout: Too large resource version: 999999, current: )" + current + R"(",
  "reason": "Timeout",
  "details": {
    "causes": [
      {
        "reason": "ResourceVersionTooLarge",
        "message": "Too large resource version"
      }
    ],
    "retryAfterSeconds": 1
  },
  "code": 504
})");

  auto bad = f.get("/api/v1/pods?labelSelector=a%20b", kPomList);
  CHECK(bad.status == 400);
  CHECK(bad.body.starts_with("{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n"));
  CHECK(bad.body.ends_with("\"reason\": \"BadRequest\",\n  \"code\": 400\n}"));
  // The encoder's HTML-safe escapes survive the indentation.
  auto html = f.get("/api/v1/pods?fieldSelector=%3Cx%3E%3D1", kPomList);
  CHECK(html.status == 400);
  CHECK(html.body.find(R"("message": "field label not supported: \u003cx\u003e")") != std::string::npos);
  // The 406 of a conversion the LIST cannot make is written the same way.
  auto not_list = f.get("/api/v1/pods", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1");
  CHECK(not_list.status == 406);
  CHECK(not_list.body.ends_with("\"code\": 406\n}"));
}

TEST_CASE("An error for an Accept with a plain JSON clause stays compact, and successes are unchanged") {
  Fixture f;
  auto r = f.get("/api/v1/pods?labelSelector=a%20b", kPomList + ",application/json");
  CHECK(r.status == 400);
  CHECK(r.body.starts_with(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"));
  CHECK(r.body.ends_with("\"code\":400}\n"));
  auto ok = f.get("/api/v1/namespaces/default/configmaps", kPomList);
  CHECK(ok.status == 200);
  CHECK(ok.body.starts_with(R"({"kind":"PartialObjectMetadataList",)"));
  CHECK(ok.body.back() == '\n');
}

}  // namespace testapi
