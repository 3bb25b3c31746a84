#include "proxy/api_status.h"

#include <doctest/doctest.h>

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

TEST_CASE("Messages are JSON-escaped like Go's encoder") {
  CHECK(jsonQuote("a\"b\\c\n<&>") == R"("a\"b\\c\n\u003c\u0026\u003e")");
}
