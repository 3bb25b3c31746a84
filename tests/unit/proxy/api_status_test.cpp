#include "proxy/api_status.h"

#include <doctest/doctest.h>

#include "cache/go_json.h"

using namespace proxy;

TEST_CASE("Upstream failures map to a 503 Status naming the problem (E1)") {
  HttpAnswer a = toHttpAnswer({Reason::ServiceUnavailable,
                               "error trying to reach upstream https://10.0.0.1:6443: connection refused"});
  CHECK(a.code == 503);
  CHECK(a.content_type == "application/json");
  CHECK(a.body ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"error trying to reach upstream https://10.0.0.1:6443: connection refused","reason":"ServiceUnavailable","code":503})"
        "\n");
}

TEST_CASE("Each reason has the apiserver's code (E2)") {
  CHECK(toHttpAnswer({Reason::BadRequest, "x"}).code == 400);
  CHECK(toHttpAnswer({Reason::NotFound, "x"}).code == 404);
  CHECK(toHttpAnswer({Reason::Expired, "x"}).code == 410);
  CHECK(toHttpAnswer({Reason::TooManyRequests, "x"}).code == 429);
  CHECK(toHttpAnswer({Reason::Timeout, "x"}).code == 504);
}

TEST_CASE("Internal errors omit the reason like a non-Status Go error (E1)") {
  HttpAnswer a = toHttpAnswer({Reason::Internal, "boom"});
  CHECK(a.code == 500);
  CHECK(a.body.find("\"reason\"") == std::string::npos);
  CHECK(a.body.find(R"("code":500)") != std::string::npos);
}

TEST_CASE("Retry-After appears in details and as a header value (E3)") {
  HttpAnswer a = toHttpAnswer({Reason::TooManyRequests, "slow down", 1});
  CHECK(a.retry_after_seconds == 1);
  CHECK(a.body.find(R"("details":{"retryAfterSeconds":1})") != std::string::npos);
}

TEST_CASE("Messages are JSON-escaped like Go's encoder: HTML characters, invalid UTF-8, U+2028/2029 (E1)") {
  // The bytes kube-apiserver writes for fieldSelector=%FF%E2%80%A8 (tests/realcluster
  // test_real_bad_params checks them against the real one).
  HttpAnswer a = toHttpAnswer({Reason::BadRequest, "a\"b\\c\n<&> \xff\xe2\x80\xa8\xe2\x80\xa9"});
  CHECK(a.body.find(R"("message":"a\"b\\c\n\u003c\u0026\u003e \ufffd\u2028\u2029")") != std::string::npos);
}

TEST_CASE("A Status with an empty message omits it, as metav1.Status's omitempty does (E1)") {
  CHECK(cache::statusJson({Reason::NotFound, ""}) ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"NotFound","code":404})");
}

TEST_CASE("A Status the client's Accept cannot negotiate is json.MarshalIndent output, without newline (E1)") {
  HttpAnswer a = toHttpAnswer({Reason::BadRequest, "unable to parse requirement: found '<', expected: identifier"},
                              StatusEncoding::RawJson);
  CHECK(a.code == 400);
  CHECK(a.content_type == "application/json");
  CHECK(a.body ==
        "{\n"
        "  \"kind\": \"Status\",\n"
        "  \"apiVersion\": \"v1\",\n"
        "  \"metadata\": {},\n"
        "  \"status\": \"Failure\",\n"
        "  \"message\": \"unable to parse requirement: found '\\u003c', expected: identifier\",\n"
        "  \"reason\": \"BadRequest\",\n"
        "  \"code\": 400\n"
        "}");

  Status status{Reason::Invalid, "ListOptions.meta.k8s.io \"\" is invalid: x: Invalid value: \"a,b\": {x}"};
  status.details_group = "meta.k8s.io";
  status.details_kind = "ListOptions";
  status.causes.push_back({"FieldValueInvalid", "Invalid value: \"a,b\": {x}", "x"});
  status.causes.push_back({"FieldValueRequired", "Required value", "y"});
  CHECK(toHttpAnswer(status, StatusEncoding::RawJson).body ==
        "{\n"
        "  \"kind\": \"Status\",\n"
        "  \"apiVersion\": \"v1\",\n"
        "  \"metadata\": {},\n"
        "  \"status\": \"Failure\",\n"
        "  \"message\": \"ListOptions.meta.k8s.io \\\"\\\" is invalid: x: Invalid value: \\\"a,b\\\": {x}\",\n"
        "  \"reason\": \"Invalid\",\n"
        "  \"details\": {\n"
        "    \"group\": \"meta.k8s.io\",\n"
        "    \"kind\": \"ListOptions\",\n"
        "    \"causes\": [\n"
        "      {\n"
        "        \"reason\": \"FieldValueInvalid\",\n"
        "        \"message\": \"Invalid value: \\\"a,b\\\": {x}\",\n"
        "        \"field\": \"x\"\n"
        "      },\n"
        "      {\n"
        "        \"reason\": \"FieldValueRequired\",\n"
        "        \"message\": \"Required value\",\n"
        "        \"field\": \"y\"\n"
        "      }\n"
        "    ]\n"
        "  },\n"
        "  \"code\": 422\n"
        "}");
}

TEST_CASE("Raw JSON keeps the code and Retry-After; a negotiated Status is unchanged (E1, E3)") {
  HttpAnswer raw = toHttpAnswer({Reason::Timeout, "Timeout: Too large resource version: 9, current: 8", 1},
                                StatusEncoding::RawJson);
  CHECK(raw.code == 504);
  CHECK(raw.retry_after_seconds == 1);
  CHECK(raw.body.find("  \"details\": {\n    \"retryAfterSeconds\": 1\n  },\n  \"code\": 504\n}") != std::string::npos);
  CHECK(toHttpAnswer({Reason::NotFound, "x"}, StatusEncoding::Negotiated).body ==
        toHttpAnswer({Reason::NotFound, "x"}).body);

  HttpAnswer built_elsewhere{404, "application/json", R"({"kind":"Status","code":404})" "\n", 0};
  encodeStatus(built_elsewhere, StatusEncoding::Negotiated);
  CHECK(built_elsewhere.body == R"({"kind":"Status","code":404})" "\n");
  encodeStatus(built_elsewhere, StatusEncoding::RawJson);
  CHECK(built_elsewhere.body == "{\n  \"kind\": \"Status\",\n  \"code\": 404\n}");
}

TEST_CASE("goJsonIndent indents like encoding/json's Indent") {
  CHECK(cache::goJsonIndent("{}") == "{}");
  CHECK(cache::goJsonIndent("[]") == "[]");
  CHECK(cache::goJsonIndent(R"({"a":[],"b":{},"c":[1,{"d":null}]})") ==
        "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": null\n    }\n  ]\n}");
  // Punctuation and escapes inside strings are left alone; whitespace outside is dropped.
  CHECK(cache::goJsonIndent(" { \"k\\\"{,:\" : \"[v]\\\\\" } \n") == "{\n  \"k\\\"{,:\": \"[v]\\\\\"\n}");
  CHECK(cache::goJsonIndent("\"s\"") == "\"s\"");
}
