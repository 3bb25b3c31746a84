#include "proxy/reads/read_status.h"

#include "cache/query/list_options.h"

#include <doctest/doctest.h>

using namespace proxy;

TEST_CASE("Too large resource version is a 504 Timeout with the cause and Retry-After 1 (R7)") {
  HttpAnswer a = toHttpAnswer(tooLargeResourceVersionStatus(99999, 12500));
  CHECK(a.code == 504);
  CHECK(a.retry_after_seconds == 1);
  CHECK(a.body ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 99999, current: 12500","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504})"
        "\n");
}

TEST_CASE("NotFound names the plural resource and group like the apiserver (R10)") {
  watch::ApiResource deployments;
  deployments.group = "apps";
  deployments.version = "v1";
  deployments.resource = "deployments";
  CHECK(toHttpAnswer(notFoundStatus(deployments, "nope")).body ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"nope\" not found","reason":"NotFound","details":{"name":"nope","group":"apps","kind":"deployments"},"code":404})"
        "\n");
  watch::ApiResource pods;
  pods.version = "v1";
  pods.resource = "pods";
  CHECK(toHttpAnswer(notFoundStatus(pods, "nope")).body ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404})"
        "\n");
}

TEST_CASE("ListOptions validation errors keep their code, details and causes (R4)") {
  auto spec = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  auto parsed = cache::ListOptions::parse("resourceVersionMatch=NotOlderThan", *spec);
  REQUIRE_FALSE(parsed);
  HttpAnswer a = toHttpAnswer(parsed.error());
  CHECK(a.code == 422);
  CHECK(a.body ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided","reason":"Invalid","details":{"group":"meta.k8s.io","kind":"ListOptions","causes":[{"reason":"FieldValueForbidden","message":"Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided","field":"resourceVersionMatch"}]},"code":422})"
        "\n");
  auto bad = cache::ListOptions::parse("limit=abc", *spec);
  REQUIRE_FALSE(bad);
  CHECK(toHttpAnswer(bad.error()).code == 400);
}
