#include <doctest/doctest.h>

#include "tests/apiserver/selectors/label_validation.h"
#include "tests/apiserver/semantics.h"
#include "test_util.h"

using namespace testapi;
using namespace testapi::test;

namespace {

const std::string kNameRegex =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const std::string kValueRegex =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

std::shared_ptr<const LabelSelector> sel(std::string_view text) { return valueOf(parseLabelSelector(text)); }

std::string parseError(std::string_view text) {
  auto r = parseLabelSelector(text);
  const auto& e = errorOf(r);
  CHECK(e.code == 400);
  CHECK(e.reason == "BadRequest");
  return e.message;
}

}  // namespace

TEST_CASE("The empty label selector matches everything (S1)") {
  auto s = sel("");
  CHECK(s->empty());
  CHECK(s->matches({}));
  CHECK(s->matches({{"a", "b"}}));
  CHECK(sel("  ")->empty());
}

TEST_CASE("Equality requirements need the key; inequality also matches a missing key (S1)") {
  for (auto text : {"app=web", "app==web", " app = web ", "app in (web)", "app in (db,web)"}) {
    CAPTURE(text);
    auto s = sel(text);
    CHECK_FALSE(s->empty());
    CHECK(s->matches({{"app", "web"}}));
    CHECK_FALSE(s->matches({{"app", "other"}}));
    CHECK_FALSE(s->matches({}));
  }
  for (auto text : {"app!=web", "app notin (web)", "app notin (web,db)"}) {
    CAPTURE(text);
    auto s = sel(text);
    CHECK_FALSE(s->matches({{"app", "web"}}));
    CHECK(s->matches({{"app", "x"}}));
    CHECK(s->matches({}));
  }
}

TEST_CASE("Existence requirements test only the key (S1)") {
  CHECK(sel("app")->matches({{"app", ""}}));
  CHECK_FALSE(sel("app")->matches({{"x", "y"}}));
  CHECK(sel("!app")->matches({{"x", "y"}}));
  CHECK_FALSE(sel("!app")->matches({{"app", "1"}}));
  CHECK(sel("a,!b")->matches({{"a", "1"}}));
  CHECK(sel("example.com/a-b_c.d")->matches({{"example.com/a-b_c.d", "1"}}));
}

TEST_CASE("An empty value matches the empty label value only (S1)") {
  CHECK(sel("app=")->matches({{"app", ""}}));
  CHECK_FALSE(sel("app=")->matches({{"app", "x"}}));
  CHECK_FALSE(sel("app=")->matches({}));
  CHECK(sel("app=,b")->matches({{"app", ""}, {"b", "1"}}));
}

TEST_CASE("Gt and Lt compare integer label values and need the key (S1)") {
  CHECK(sel("n>5")->matches({{"n", "6"}}));
  CHECK_FALSE(sel("n>5")->matches({{"n", "5"}}));
  CHECK_FALSE(sel("n>5")->matches({{"n", "x"}}));
  CHECK_FALSE(sel("n>5")->matches({}));
  CHECK(sel("n<5")->matches({{"n", "-3"}}));
  CHECK(sel("n < 10, n > 1")->matches({{"n", "4"}}));
}

TEST_CASE("Comma means AND across requirements (S1)") {
  auto s = sel("a=1,b in (x,y),!c");
  CHECK(s->matches({{"a", "1"}, {"b", "y"}}));
  CHECK_FALSE(s->matches({{"a", "1"}, {"b", "y"}, {"c", ""}}));
  CHECK_FALSE(s->matches({{"a", "1"}, {"b", "z"}}));
}

TEST_CASE("An empty set and trailing commas in a set stand for the empty value (S2)") {
  CHECK(sel("a in ()")->matches({{"a", ""}}));
  CHECK_FALSE(sel("a in ()")->matches({{"a", "x"}}));
  CHECK(sel("a in (x,)")->matches({{"a", ""}}));
  CHECK(sel("a in (x,)")->matches({{"a", "x"}}));
  CHECK(sel("a in (,x)")->matches({{"a", ""}}));
  CHECK(sel("a in (x,,y)")->matches({{"a", ""}}));
  CHECK(sel("a notin ()")->matches({{"a", "x"}}));
  CHECK_FALSE(sel("a notin ()")->matches({{"a", ""}}));
  CHECK(sel("a notin ()")->matches({}));
}

TEST_CASE("in and notin are plain values inside a value position (S1)") {
  CHECK(sel("a=in")->matches({{"a", "in"}}));
  CHECK(sel("a in (notin)")->matches({{"a", "notin"}}));
}

TEST_CASE("Label selector syntax errors carry the apiserver's texts (S2)") {
  CHECK(parseError("a b") == "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
  CHECK(parseError("=x") == "found '=', expected: !, identifier, or 'end of string'");
  CHECK(parseError("a=b,") == "found '', expected: identifier after ','");
  CHECK(parseError("a in (b") == "unable to parse requirement: found '', expected: ',' or ')'");
  CHECK(parseError("a=b c") == "found 'c', expected: ',' or 'end of string'");
  CHECK(parseError("a in b") == "unable to parse requirement: found 'b' expected: '('");
  CHECK(parseError("a in (=") == "unable to parse requirement: found '=', expected: ',', ')' or identifier");
  CHECK(parseError("a in (b c)") == "unable to parse requirement: found 'c', expected: ',' or ')'");
  CHECK(parseError("a in (,=)") == "unable to parse requirement: found '=', expected: ',', or identifier");
  CHECK(parseError("a=(") == "unable to parse requirement: found '(', expected: identifier");
  CHECK(parseError("!") == "unable to parse requirement: found '', expected: identifier");
  CHECK(parseError("!a=b") == "found '=', expected: ',' or 'end of string'");
  CHECK(parseError("a,,b") == "found ',', expected: identifier after ','");
}

TEST_CASE("Gt and Lt need an integer value (S2)") {
  auto r = parseLabelSelector("a>x");
  CHECK(errorOf(r).toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer","reason":"BadRequest","code":400})J");
  CHECK(parseError("a<1.5") ==
        "unable to parse requirement: values[0]: Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must be an integer");
  CHECK(parseError("a>") ==
        "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer");
}

TEST_CASE("Invalid keys are reported with the nil field path (S2)") {
  CHECK(parseError("-k=v") == "unable to parse requirement: <nil>: Invalid value: \"-k\": name part " + kNameRegex);
  CHECK(parseError("/k") == "unable to parse requirement: <nil>: Invalid value: \"/k\": prefix part must be non-empty");
  CHECK(parseError("a/") ==
        "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; name part " + kNameRegex);
  CHECK(parseError("Example.com/k") ==
        "unable to parse requirement: <nil>: Invalid value: \"Example.com/k\": prefix part a lowercase RFC 1123 "
        "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  CHECK(parseError("a/b/c") ==
        "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key " + kNameRegex +
            " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
}

TEST_CASE("Label key and value lengths are reported in bytes, as apimachinery v0.37's content package words them (S2)") {
  CHECK(parseError(std::string(64, 'k')) == "unable to parse requirement: <nil>: Invalid value: \"" +
                                                std::string(64, 'k') + "\": name part must be no more than 63 bytes");
  const std::string long_prefix = std::string(250, 'p') + ".com";
  CHECK(parseError(long_prefix + "/k") == "unable to parse requirement: <nil>: Invalid value: \"" + long_prefix +
                                             "/k\": prefix part must be no more than 253 bytes");
  CHECK(parseError("a=" + std::string(64, 'v')) == "unable to parse requirement: values[0][a]: Invalid value: \"" +
                                                      std::string(64, 'v') + "\": must be no more than 63 bytes");
  // A 63-byte name part and value are still valid.
  CHECK(std::holds_alternative<std::shared_ptr<const LabelSelector>>(
      parseLabelSelector(std::string(63, 'k') + "=" + std::string(63, 'v'))));
  // util/validation, which object names go through, keeps the older wording.
  CHECK(isDns1123Subdomain(std::string(254, 'a')) ==
        std::vector<std::string>{"must be no more than 253 characters"});
}

TEST_CASE("Invalid values are reported under values[i][key] (S2)") {
  CHECK(parseError("a=b$") == "unable to parse requirement: values[0][a]: Invalid value: \"b$\": " + kValueRegex);
  CHECK(parseError("a in (ok,-x)") ==
        "unable to parse requirement: values[0][a]: Invalid value: \"-x\": " + kValueRegex);
  CHECK(parseError("a>x$") ==
        "unable to parse requirement: [values[0]: Invalid value: \"x$\": for 'Gt', 'Lt' operators, the value must be "
        "an integer, values[0][a]: Invalid value: \"x$\": " + kValueRegex + "]");
}

TEST_CASE("Label validation helpers accept the documented forms") {
  CHECK(isLabelKey("app.kubernetes.io/name").empty());
  CHECK(isLabelKey("A_b.C-1").empty());
  CHECK(isLabelValue("").empty());
  CHECK(isLabelValue("v1.2_3-x").empty());
  CHECK(isDns1123Subdomain("a.b-c.d").empty());
  CHECK_FALSE(isDns1123Subdomain("a..b").empty());
}
