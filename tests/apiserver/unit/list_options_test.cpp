#include <doctest/doctest.h>

#include "tests/apiserver/semantics.h"
#include "test_util.h"

using namespace testapi;
using namespace testapi::test;

namespace {

std::string invalidMessage(const std::string& e) { return "ListOptions.meta.k8s.io \"\" is invalid: " + e; }

const ApiError& listError(const Query& q, bool watch = false) {
  static Result<ListOptions> keep;
  keep = parseListOptions(q, watch);
  return errorOf(keep);
}

}  // namespace

TEST_CASE("Query booleans follow the apiserver's conversion: only 0 and false in any case are false (E4)") {
  CHECK_FALSE(parseQueryBool("0"));
  CHECK_FALSE(parseQueryBool("false"));
  CHECK_FALSE(parseQueryBool("False"));
  CHECK_FALSE(parseQueryBool("FALSE"));
  CHECK_FALSE(parseQueryBool("fAlSe"));
  CHECK(parseQueryBool(""));
  CHECK(parseQueryBool("1"));
  CHECK(parseQueryBool("true"));
  CHECK(parseQueryBool("True"));
  CHECK(parseQueryBool("f"));
  CHECK(parseQueryBool("no"));
}

TEST_CASE("An absent boolean is false and a bare one is true (E4)") {
  auto absent = valueOf(parseListOptions({}, false));
  CHECK_FALSE(absent.watch);
  CHECK_FALSE(absent.allow_watch_bookmarks);
  CHECK_FALSE(absent.send_initial_events.has_value());
  auto bare = valueOf(parseListOptions({{"watch", ""}, {"allowWatchBookmarks", ""}, {"resourceVersion", "5"}}, false));
  CHECK(bare.watch);
  CHECK(bare.allow_watch_bookmarks);
}

TEST_CASE("Integers are parsed as base-10 int64 with strconv error texts (E4)") {
  auto ok = valueOf(parseListOptions({{"limit", "500"}, {"timeoutSeconds", "-3"}}, false));
  CHECK(ok.limit == 500);
  CHECK(ok.timeout_seconds == -3);
  CHECK(ok.has_timeout_seconds);
  auto& e = listError({{"limit", "abc"}});
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"strconv.ParseInt: parsing \"abc\": invalid syntax","reason":"BadRequest","code":400})J");
  CHECK(listError({{"limit", ""}}).message == "strconv.ParseInt: parsing \"\": invalid syntax");
  CHECK(listError({{"limit", "9223372036854775808"}}).message ==
        "strconv.ParseInt: parsing \"9223372036854775808\": value out of range");
  CHECK(listError({{"timeoutSeconds", "1.5"}}).message == "strconv.ParseInt: parsing \"1.5\": invalid syntax");
  CHECK(valueOf(parseListOptions({{"limit", "-9223372036854775808"}}, false)).limit == INT64_MIN);
}

TEST_CASE("The first of repeated query values wins") {
  Query q{{"limit", "7"}, {"limit", "abc"}};
  CHECK(valueOf(parseListOptions(q, false)).limit == 7);
}

TEST_CASE("LIST option validation answers 422 with the apiserver's field errors (R4)") {
  SUBCASE("resourceVersionMatch without resourceVersion") {
    auto& e = listError({{"resourceVersionMatch", "NotOlderThan"}});
    CHECK(e.toJson() ==
          R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided","reason":"Invalid","details":{"group":"meta.k8s.io","kind":"ListOptions","causes":[{"reason":"FieldValueForbidden","message":"Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided","field":"resourceVersionMatch"}]},"code":422})J");
  }
  SUBCASE("resourceVersionMatch with continue") {
    auto& e = listError({{"resourceVersionMatch", "Exact"}, {"resourceVersion", "5"}, {"continue", "x"}});
    CHECK(e.message == invalidMessage("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when "
                                      "continue is provided"));
  }
  SUBCASE("unsupported resourceVersionMatch") {
    auto& e = listError({{"resourceVersionMatch", "Foo"}, {"resourceVersion", "5"}});
    CHECK(e.message == invalidMessage(R"J(resourceVersionMatch: Unsupported value: "Foo": supported values: "Exact", "NotOlderThan", "")J"));
    REQUIRE(e.causes.size() == 1);
    CHECK(e.causes[0].reason == "FieldValueNotSupported");
    CHECK(e.causes[0].message == R"J(Unsupported value: "Foo": supported values: "Exact", "NotOlderThan", "")J");
  }
  SUBCASE("Exact at resourceVersion 0") {
    auto& e = listError({{"resourceVersionMatch", "Exact"}, {"resourceVersion", "0"}});
    CHECK(e.message == invalidMessage(R"J(resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0")J"));
  }
  SUBCASE("sendInitialEvents on a list") {
    auto& e = listError({{"sendInitialEvents", "false"}});
    CHECK(e.message == invalidMessage("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"));
    CHECK(e.causes[0].field == "sendInitialEvents");
  }
  SUBCASE("several errors are bracketed") {
    auto& e = listError({{"resourceVersionMatch", "Foo"}, {"sendInitialEvents", "true"}});
    CHECK(e.message ==
          invalidMessage(R"J([resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, resourceVersionMatch: Unsupported value: "Foo": supported values: "Exact", "NotOlderThan", "", sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list])J"));
    CHECK(e.causes.size() == 3);
  }
}

TEST_CASE("WATCH option validation answers 422 with the apiserver's field errors (R4, W9)") {
  SUBCASE("sendInitialEvents without NotOlderThan") {
    auto& e = listError({{"watch", "1"}, {"sendInitialEvents", "true"}}, false);
    CHECK(e.message == invalidMessage("resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
                                      "resourceVersionMatch to NotOlderThan"));
  }
  SUBCASE("resourceVersionMatch without sendInitialEvents") {
    auto& e = listError({{"resourceVersionMatch", "NotOlderThan"}, {"resourceVersion", "5"}}, true);
    CHECK(e.message == invalidMessage("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch "
                                      "unless sendInitialEvents is provided"));
  }
  SUBCASE("resourceVersionMatch other than NotOlderThan") {
    auto& e = listError({{"resourceVersionMatch", "Exact"}, {"sendInitialEvents", "true"}}, true);
    CHECK(e.message ==
          invalidMessage(R"J([resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"])J"));
    REQUIRE(e.causes.size() == 2);
    CHECK(e.causes[1].message == R"J(Unsupported value: "Exact": supported values: "NotOlderThan")J");
  }
  SUBCASE("resourceVersionMatch with continue") {
    auto& e = listError(
        {{"resourceVersionMatch", "NotOlderThan"}, {"sendInitialEvents", "true"}, {"continue", "abc"}}, true);
    CHECK(e.message == invalidMessage("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when "
                                      "continue is provided"));
  }
}

TEST_CASE("A watch-list request passes validation and keeps its options (W9)") {
  auto o = valueOf(parseListOptions({{"allowWatchBookmarks", "true"},
                                     {"resourceVersionMatch", "NotOlderThan"},
                                     {"sendInitialEvents", "true"},
                                     {"timeoutSeconds", "452"},
                                     {"watch", "true"}},
                                    false));
  CHECK(o.watch);
  CHECK(o.send_initial_events == std::optional<bool>(true));
  CHECK(o.resource_version_match == "NotOlderThan");
  CHECK(o.timeout_seconds == 452);
  auto no_initial = valueOf(parseListOptions(
      {{"resourceVersionMatch", "NotOlderThan"}, {"sendInitialEvents", "false"}, {"resourceVersion", "0"}}, true));
  CHECK(no_initial.send_initial_events == std::optional<bool>(false));
}

TEST_CASE("A watch from no particular version is defaulted to a consistent watch-list (W4, W9)") {
  auto unset = valueOf(parseListOptions({{"watch", "true"}}, false));
  CHECK(unset.send_initial_events == std::optional<bool>(true));
  CHECK(unset.resource_version_match == "NotOlderThan");
  auto zero = valueOf(parseListOptions({{"resourceVersion", "0"}}, true));
  CHECK(zero.send_initial_events == std::optional<bool>(true));
  auto exact = valueOf(parseListOptions({{"resourceVersion", "100"}}, true));
  CHECK_FALSE(exact.send_initial_events.has_value());
  CHECK(exact.resource_version_match.empty());
}

TEST_CASE("A continue token with a resourceVersion other than 0 is a 400 (R5)") {
  const std::string token = encodeContinue(12345, std::string("nginx-1\0", 8));
  auto& e = listError({{"continue", token}, {"resourceVersion", "12"}});
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"specifying resource version is not allowed when using continue","reason":"BadRequest","code":400})J");
  CHECK(valueOf(parseListOptions({{"continue", token}, {"resourceVersion", "0"}}, false)).continue_token == token);
  CHECK(listError({{"continue", "!!"}, {"resourceVersion", "12"}}).message ==
        "invalid continue token: continue key is not valid: illegal base64 data at input byte 0");
}

TEST_CASE("A malformed resourceVersion on LIST is a 400 with the versioner text (R6)") {
  auto& e = listError({{"resourceVersion", "abc"}});
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax","reason":"BadRequest","code":400})J");
  CHECK(listError({{"resourceVersion", "-1"}}).message ==
        R"J(invalid resource version: resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax)J");
  CHECK(listError({{"resourceVersion", "18446744073709551616"}}).message ==
        R"J(invalid resource version: resourceVersion: Invalid value: "18446744073709551616": strconv.ParseUint: parsing "18446744073709551616": value out of range)J");
}

TEST_CASE("A malformed resourceVersion on WATCH is the cache's bare 500 (R6)") {
  auto& e = listError({{"resourceVersion", "abc"}}, true);
  CHECK(e.toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax","code":500})J");
}

TEST_CASE("Resource versions parse as uint64 with empty meaning 0 (R1, R6)") {
  CHECK(parseResourceVersion("12500") == std::optional<uint64_t>(12500));
  CHECK(parseResourceVersion("") == std::optional<uint64_t>(0));
  CHECK(parseResourceVersion("0") == std::optional<uint64_t>(0));
  CHECK(parseResourceVersion("18446744073709551615") == std::optional<uint64_t>(UINT64_MAX));
  CHECK_FALSE(parseResourceVersion("18446744073709551616"));
  CHECK_FALSE(parseResourceVersion("abc"));
  CHECK_FALSE(parseResourceVersion("+1"));
  CHECK_FALSE(parseResourceVersion(" 1"));
}

TEST_CASE("Unknown query parameters are ignored and selectors are kept raw (E4)") {
  auto o = valueOf(parseListOptions(
      {{"pretty", "true"}, {"labelSelector", "a=b"}, {"fieldSelector", "metadata.name=x"}, {"timeout", "5s"}}, false));
  CHECK(o.label_selector == "a=b");
  CHECK(o.field_selector == "metadata.name=x");
}

TEST_CASE("Selector syntax errors are 400s from query decoding, after integer errors (S2, S3, E4)") {
  CHECK(listError({{"labelSelector", "a b"}}).message ==
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
  CHECK(listError({{"fieldSelector", "foo"}}).message == "invalid selector: 'foo'; can't understand 'foo'");
  CHECK(listError({{"labelSelector", "a b"}, {"limit", "x"}}).message ==
        "strconv.ParseInt: parsing \"x\": invalid syntax");
  CHECK(listError({{"labelSelector", "a b"}, {"fieldSelector", "foo"}}).message ==
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
  CHECK(listError({{"timeoutSeconds", "t"}, {"limit", "l"}}).message ==
        "strconv.ParseInt: parsing \"t\": invalid syntax");
  // A field label the type does not know is checked later, by parseFieldSelector.
  CHECK(valueOf(parseListOptions({{"fieldSelector", "spec.unknown=1"}}, false)).field_selector == "spec.unknown=1");
}

TEST_CASE("The /watch/ path's options follow ?watch: without it, LIST rules and no defaulting (W1, W4)") {
  auto prefixed = parseWatchOptionsInHandler(
      {{"sendInitialEvents", "true"}, {"resourceVersionMatch", "NotOlderThan"}, {"resourceVersion", "5"}});
  REQUIRE(std::holds_alternative<ApiError>(prefixed));
  CHECK(std::get<ApiError>(prefixed).message ==
        invalidMessage("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"));
  auto legacy = valueOf(parseWatchOptionsInHandler({{"allowWatchBookmarks", "true"}}));
  CHECK_FALSE(legacy.send_initial_events.has_value());
  auto watched = valueOf(parseWatchOptionsInHandler({{"watch", "true"}}));
  CHECK(watched.send_initial_events == std::optional<bool>(true));
}
