#include "cache/query/list_options.h"
#include "cache/query/query_values.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using cache::ListOptions;
using cache::ListOptionsConfig;
using cache::Status;
using cache::ListSemantics;
using cache::FieldSpec;

const FieldSpec& pods() {
  static const auto spec = FieldSpec::forBuiltin("", "v1", "pods", true);
  return *spec;
}

ListOptions mustParse(std::string_view query, ListOptionsConfig config = {}) {
  auto r = ListOptions::parse(query, pods(), config);
  INFO("query: ", std::string(query), " error: ", r.has_value() ? std::string() : r.error().message);
  REQUIRE(r.has_value());
  return *r;
}

cache::Status parseError(std::string_view query, ListOptionsConfig config = {}) {
  auto r = ListOptions::parse(query, pods(), config);
  INFO("query: ", std::string(query));
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

const std::string kInvalidPrefix = "ListOptions.meta.k8s.io \"\" is invalid: ";
const std::string kValidToken = cache::ContinueToken::encode(12345, "default/nginx-1");

}  // namespace

TEST_CASE("E4: booleans are false only when absent, 0 or false in any case") {
  struct Row {
    const char* query;
    bool watch;
  };
  for (const Row& row : {Row{"", false}, Row{"watch", true}, Row{"watch=", true}, Row{"watch=1", true},
                         Row{"watch=true", true}, Row{"watch=True", true}, Row{"watch=yes", true},
                         Row{"watch=0", false}, Row{"watch=false", false}, Row{"watch=FALSE", false},
                         Row{"watch=False", false}, Row{"watch=false&watch=true", false},
                         Row{"watch=fal%C5%BFe", false},  // Go's EqualFold folds U+017F onto 's'
                         Row{"watch=fals", true}, Row{"watch=falsee", true},
                         Row{"watch=true&watch=false", true}}) {
    CAPTURE(row.query);
    CHECK(mustParse(row.query).watch == row.watch);
  }
  CHECK(mustParse("allowWatchBookmarks=True&watch=1").allow_watch_bookmarks);
  CHECK_FALSE(mustParse("allowWatchBookmarks=0").allow_watch_bookmarks);
}

TEST_CASE("E4: integers must be base-10 int64 or the request is a 400 with strconv's text") {
  CHECK(mustParse("limit=500").limit == 500);
  CHECK(mustParse("limit=-1").limit == -1);
  CHECK(mustParse("timeoutSeconds=452&watch=1").timeout_seconds == 452);
  CHECK_FALSE(mustParse("").timeout_seconds.has_value());
  struct Row {
    const char* query;
    const char* message;
  };
  for (const Row& row : {Row{"limit=abc", "strconv.ParseInt: parsing \"abc\": invalid syntax"},
                         Row{"limit=", "strconv.ParseInt: parsing \"\": invalid syntax"},
                         Row{"limit=99999999999999999999", "strconv.ParseInt: parsing \"99999999999999999999\": value out of range"},
                         Row{"timeoutSeconds=1.5", "strconv.ParseInt: parsing \"1.5\": invalid syntax"},
                         Row{"limit=x&watch=1", "strconv.ParseInt: parsing \"x\": invalid syntax"},
                         // timeoutSeconds is decoded before limit.
                         Row{"limit=a&timeoutSeconds=b", "strconv.ParseInt: parsing \"b\": invalid syntax"}}) {
    CAPTURE(row.query);
    auto e = parseError(row.query);
    CHECK(cache::httpCode(e.reason) == 400);
    CHECK(e.reason == cache::Reason::BadRequest);
    CHECK(e.message == row.message);
    CHECK(e.causes.empty());
  }
}

TEST_CASE("E4: unknown parameters are ignored and values are percent-decoded, first value wins") {
  auto o = mustParse("pretty=true&labelSelector=app%3Dweb%2Ctier+in+%28a%29&fieldSelector=spec.nodeName%3Dn1&x;y=1");
  CHECK(o.label_selector_text == "app=web,tier in (a)");
  CHECK(o.label_selector.requirements().size() == 2);
  CHECK(o.field_selector.requiredValue("spec.nodeName") == std::optional<std::string_view>("n1"));
  CHECK(mustParse("limit=5&limit=abc").limit == 5);
  // A pair with a bad escape is dropped, as Go's Request.URL.Query() drops it.
  CHECK(mustParse("limit=%zz&limit=7").limit == 7);
  auto q = cache::QueryValues::parse("a=1&b&c=%41+B&&d=%4&e=x=y");
  CHECK(q.get("a") == std::optional<std::string_view>("1"));
  CHECK(q.get("b") == std::optional<std::string_view>(""));
  CHECK(q.get("c") == std::optional<std::string_view>("A B"));
  CHECK_FALSE(q.has("d"));
  CHECK(q.get("e") == std::optional<std::string_view>("x=y"));
}

TEST_CASE("S2, S3: selector syntax errors are 400s raised while decoding") {
  auto label = parseError("labelSelector=a%20b");
  CHECK(cache::httpCode(label.reason) == 400);
  CHECK(label.message == "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
  auto field = parseError("fieldSelector=bogus");
  CHECK(cache::httpCode(field.reason) == 400);
  CHECK(field.message == "invalid selector: 'bogus'; can't understand 'bogus'");
  // Label selectors are decoded before field selectors, integers before both.
  CHECK(parseError("labelSelector=%3D&fieldSelector=bogus").message ==
        "found '=', expected: !, identifier, or 'end of string'");
  CHECK(parseError("labelSelector=%3D&limit=x").message == "strconv.ParseInt: parsing \"x\": invalid syntax");
}

TEST_CASE("R4: each LIST validation row is a 422 with the exact message and cause") {
  struct Row {
    std::string query;
    std::string field;
    std::string cause_type;
    std::string body;
  };
  const std::vector<Row> rows{
      {"resourceVersionMatch=NotOlderThan", "resourceVersionMatch", "FieldValueForbidden",
       "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"},
      {"resourceVersionMatch=NotOlderThan&resourceVersion=5&continue=" + kValidToken, "resourceVersionMatch",
       "FieldValueForbidden", "Forbidden: resourceVersionMatch is forbidden when continue is provided"},
      {"resourceVersionMatch=Foo&resourceVersion=5", "resourceVersionMatch", "FieldValueNotSupported",
       "Unsupported value: \"Foo\": supported values: \"Exact\", \"NotOlderThan\", \"\""},
      {"resourceVersionMatch=Exact&resourceVersion=0", "resourceVersionMatch", "FieldValueForbidden",
       "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""},
      {"sendInitialEvents=true", "sendInitialEvents", "FieldValueForbidden",
       "Forbidden: sendInitialEvents is forbidden for list"},
      {"sendInitialEvents=false", "sendInitialEvents", "FieldValueForbidden",
       "Forbidden: sendInitialEvents is forbidden for list"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.query);
    auto e = parseError(row.query);
    CHECK(cache::httpCode(e.reason) == 422);
    CHECK(e.reason == cache::Reason::Invalid);
    CHECK(e.details_group == "meta.k8s.io");
    CHECK(e.details_kind == "ListOptions");
    CHECK(e.message == kInvalidPrefix + row.field + ": " + row.body);
    REQUIRE(e.causes.size() == 1);
    CHECK(e.causes[0].type == row.cause_type);
    CHECK(e.causes[0].message == row.body);
    CHECK(e.causes[0].field == row.field);
  }
}

TEST_CASE("R4: several LIST validation errors are joined as [e1, e2] with one cause each") {
  auto e = parseError("resourceVersionMatch=Foo&sendInitialEvents=1");
  CHECK(e.message == kInvalidPrefix +
                         "[resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is "
                         "provided, resourceVersionMatch: Unsupported value: \"Foo\": supported values: \"Exact\", "
                         "\"NotOlderThan\", \"\", sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list]");
  REQUIRE(e.causes.size() == 3);
  CHECK(e.causes[0].type == "FieldValueForbidden");
  CHECK(e.causes[1].type == "FieldValueNotSupported");
  CHECK(e.causes[2].field == "sendInitialEvents");
}

TEST_CASE("R4, W9: each WATCH validation row is a 422 with the exact message and cause") {
  struct Row {
    std::string query;
    bool gate;
    std::string message;
  };
  const std::string sie = "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList "
                          "feature gate is enabled";
  const std::vector<Row> rows{
      {"watch=1&sendInitialEvents=true", true,
       "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"},
      {"watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", false, sie},
      {"watch=1&resourceVersionMatch=NotOlderThan", false,
       "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"},
      {"watch=1&sendInitialEvents=true&resourceVersionMatch=Exact", true,
       "[resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, "
       "resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]"},
      {"watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&continue=abc", true,
       "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.query);
    auto e = parseError(row.query, ListOptionsConfig{row.gate});
    CHECK(cache::httpCode(e.reason) == 422);
    CHECK(e.reason == cache::Reason::Invalid);
    CHECK(e.message == kInvalidPrefix + row.message);
    CHECK_FALSE(e.causes.empty());
  }
  auto unsupported = parseError("watch=1&sendInitialEvents=true&resourceVersionMatch=Exact", ListOptionsConfig{true});
  REQUIRE(unsupported.causes.size() == 2);
  CHECK(unsupported.causes[1].type == "FieldValueNotSupported");
  CHECK(unsupported.causes[1].message == "Unsupported value: \"Exact\": supported values: \"NotOlderThan\"");
}

TEST_CASE("W9: a client-go watch-list request is accepted when the WatchList gate is on") {
  auto o = mustParse(
      "allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=452&watch=true",
      ListOptionsConfig{true});
  CHECK(o.watch);
  CHECK(o.send_initial_events == true);
  CHECK(o.resource_version_match == cache::ResourceVersionMatch::NotOlderThan);
  CHECK(o.timeout_seconds == 452);
}

TEST_CASE("W4: legacy watches from now are defaulted to watch-list only when the gate is on") {
  auto on = mustParse("watch=1&resourceVersion=0", ListOptionsConfig{true});
  CHECK(on.send_initial_events == true);
  CHECK(on.resource_version_match == cache::ResourceVersionMatch::NotOlderThan);
  auto off = mustParse("watch=1", ListOptionsConfig{false});
  CHECK_FALSE(off.send_initial_events.has_value());
  auto exact = mustParse("watch=1&resourceVersion=100", ListOptionsConfig{true});
  CHECK_FALSE(exact.send_initial_events.has_value());
}

TEST_CASE("W1: limit and continue are ignored on watches") {
  auto o = mustParse("watch=true&limit=5&continue=garbage&resourceVersion=100");
  CHECK(o.limit == 0);
  CHECK(o.continue_token.empty());
  CHECK_FALSE(o.continuation.has_value());
  CHECK(o.parsed_resource_version == cache::ResourceVersion(100));
}

TEST_CASE("R5: a continue token with a resourceVersion other than unset or 0 is a 400") {
  auto e = parseError("continue=" + kValidToken + "&resourceVersion=5");
  CHECK(cache::httpCode(e.reason) == 400);
  CHECK(e.reason == cache::Reason::BadRequest);
  CHECK(e.message == "specifying resource version is not allowed when using continue");
  // The token is checked first, and a malformed RV is not looked at.
  CHECK(parseError("continue=" + kValidToken + "&resourceVersion=abc").message ==
        "specifying resource version is not allowed when using continue");
  CHECK(parseError("continue=%21%21&resourceVersion=5").message ==
        "invalid continue token: continue key is not valid: illegal base64 data at input byte 0");
  auto zero = mustParse("continue=" + kValidToken + "&resourceVersion=0&limit=2");
  REQUIRE(zero.continuation.has_value());
  CHECK(zero.continuation->resource_version == 12345);
  CHECK(zero.listSemantics() == ListSemantics::Exact);
}

TEST_CASE("R6: a malformed resourceVersion is a 400 on LIST and a bare 500 on WATCH") {
  auto list = parseError("resourceVersion=abc");
  CHECK(cache::httpCode(list.reason) == 400);
  CHECK(list.reason == cache::Reason::BadRequest);
  CHECK(list.message ==
        "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": "
        "invalid syntax");
  CHECK(parseError("resourceVersion=-1&limit=5").message ==
        "invalid resource version: resourceVersion: Invalid value: \"-1\": strconv.ParseUint: parsing \"-1\": invalid "
        "syntax");
  CHECK(parseError("resourceVersion=99999999999999999999").message ==
        "invalid resource version: resourceVersion: Invalid value: \"99999999999999999999\": strconv.ParseUint: "
        "parsing \"99999999999999999999\": value out of range");
  auto watch = parseError("watch=1&resourceVersion=abc");
  CHECK(cache::httpCode(watch.reason) == 500);
  CHECK(watch.reason == cache::Reason::Internal);
  CHECK(watch.message == "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax");
}

TEST_CASE("R3: the LIST semantics follow the resourceVersion table") {
  struct Row {
    std::string query;
    ListSemantics semantics;
  };
  const std::vector<Row> rows{
      {"", ListSemantics::MostRecent},
      {"limit=500", ListSemantics::MostRecent},
      {"resourceVersion=0", ListSemantics::Any},
      {"resourceVersion=0&limit=500", ListSemantics::Any},
      {"resourceVersion=100", ListSemantics::NotOlderThan},
      {"resourceVersion=100&limit=500", ListSemantics::Exact},
      {"resourceVersion=100&resourceVersionMatch=NotOlderThan&limit=5", ListSemantics::NotOlderThan},
      {"resourceVersion=0&resourceVersionMatch=NotOlderThan", ListSemantics::Any},
      {"resourceVersion=100&resourceVersionMatch=Exact", ListSemantics::Exact},
      {"continue=" + kValidToken, ListSemantics::Exact},
      {"continue=" + cache::ContinueToken::encode(-1, "a"), ListSemantics::Latest},
  };
  for (const auto& row : rows) {
    CAPTURE(row.query);
    CHECK(mustParse(row.query).listSemantics() == row.semantics);
  }
}

TEST_CASE("S5: an unsupported field is a 400 raised after option validation") {
  auto e = parseError("fieldSelector=spec.bogus%3D1");
  CHECK(cache::httpCode(e.reason) == 400);
  CHECK(e.message == "field label not supported: spec.bogus");
  CHECK(cache::httpCode(parseError("fieldSelector=spec.bogus%3D1&resourceVersionMatch=Exact").reason) == 422);
  CHECK(mustParse("fieldSelector=spec.host%3Dn1").field_selector.requiredValue("spec.nodeName") ==
        std::optional<std::string_view>("n1"));
  CHECK(mustParse("labelSelector=app&fieldSelector=metadata.name%3Dx").hasSelectors());
  CHECK_FALSE(mustParse("").hasSelectors());
}

TEST_CASE("S2, S5 before R5, R6, P3: with two bad inputs the selector error wins, as the handler parses selectors "
          "before storage checks the RV and continue token") {
  const std::string bad_rv = "resourceVersion=abc";
  const std::string token_and_rv = "continue=" + kValidToken + "&resourceVersion=5";
  const std::string bad_token = "continue=%21%21";
  for (const std::string& storage_error : {bad_rv, token_and_rv, bad_token}) {
    CAPTURE(storage_error);
    // S2: label selector syntax.
    const auto label = parseError("labelSelector=a%20b&" + storage_error);
    CHECK(cache::httpCode(label.reason) == 400);
    CHECK(label.message.find("unable to parse requirement") != std::string::npos);
    // S3: field selector syntax.
    const auto syntax = parseError("fieldSelector=a&" + storage_error);
    CHECK(cache::httpCode(syntax.reason) == 400);
    CHECK(syntax.message.rfind("invalid selector: ", 0) == 0);
    // S5: a field the type does not support.
    const auto field = parseError("fieldSelector=spec.bogus%3D1&" + storage_error);
    CHECK(cache::httpCode(field.reason) == 400);
    CHECK(field.message == "field label not supported: spec.bogus");
  }
}
