#include "cache/selectors/label_selector.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using cache::LabelOperator;
using cache::Labels;
using cache::LabelSelector;

const std::string kKeyRules =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const std::string kValueRules =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

LabelSelector mustParse(std::string_view s) {
  auto r = LabelSelector::parse(s);
  INFO("selector: ", std::string(s), " error: ", r.has_value() ? std::string() : r.error());
  REQUIRE(r.has_value());
  return *r;
}

std::string parseError(std::string_view s) {
  auto r = LabelSelector::parse(s);
  INFO("selector: ", std::string(s));
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

bool selects(std::string_view selector, const Labels& labels) { return mustParse(selector).matches(labels); }

}  // namespace

TEST_CASE("S1: each label selector operator matches like apimachinery") {
  const Labels web{{"app", "web"}, {"tier", "front"}, {"version", "3"}};
  const Labels empty_app{{"app", ""}};
  const Labels none{};
  struct Row {
    const char* selector;
    const Labels* labels;
    bool expected;
  };
  const std::vector<Row> rows{
      {"", &web, true},
      {"", &none, true},
      {"app=web", &web, true},
      {"app==web", &web, true},
      {"app=db", &web, false},
      {"app=web", &none, false},
      {"app!=web", &web, false},
      {"app!=db", &web, true},
      {"app!=web", &none, true},  // != matches objects without the key
      {"app in (db,web)", &web, true},
      {"app in (db)", &web, false},
      {"app in (db)", &none, false},
      {"app notin (db)", &web, true},
      {"app notin (web)", &web, false},
      {"app notin (web)", &none, true},  // notin matches objects without the key
      {"app", &web, true},
      {"app", &none, false},
      {"!app", &web, false},
      {"!app", &none, true},
      {"version>2", &web, true},
      {"version>3", &web, false},
      {"version<4", &web, true},
      {"version<3", &web, false},
      {"app>1", &web, false},    // value not an integer
      {"missing<9", &web, false},  // key absent
      {"app=", &empty_app, true},
      {"app=", &web, false},
      {"app=web,tier=front", &web, true},
      {"app=web,tier=back", &web, false},
      {"  app  =  web  ,  tier  in  ( front , back )  ", &web, true},
      {"app\t=\nweb", &web, true},
      {"a in ()", &none, false},
      {"app in ()", &empty_app, true},
      {"app in (x,)", &empty_app, true},
      {"app notin ()", &web, true},
      {"in=notin", &none, false},  // keywords are identifiers where a key or value is expected
  };
  for (const auto& row : rows) {
    CAPTURE(row.selector);
    CHECK(selects(row.selector, *row.labels) == row.expected);
  }
}

TEST_CASE("S1: keywords stand for keys and values in value position") {
  auto s = mustParse("in=notin");
  REQUIRE(s.requirements().size() == 1);
  CHECK(s.requirements()[0].key == "in");
  CHECK(s.requirements()[0].values == std::vector<std::string>{"notin"});
  CHECK(s.matches(Labels{{"in", "notin"}}));
}

TEST_CASE("S1: requirements are sorted by key and set values are sorted and unique") {
  auto s = mustParse("z=1,a in (c,b,b),m");
  REQUIRE(s.requirements().size() == 3);
  CHECK(s.requirements()[0].key == "a");
  CHECK(s.requirements()[0].values == std::vector<std::string>{"b", "c"});
  CHECK(s.requirements()[1].key == "m");
  CHECK(s.requirements()[1].op == LabelOperator::Exists);
  CHECK(s.requirements()[2].key == "z");
}

TEST_CASE("S2: empty sets and trailing commas in a set parse as the empty value") {
  CHECK(mustParse("a in ()").requirements()[0].values == std::vector<std::string>{""});
  CHECK(mustParse("a in (x,)").requirements()[0].values == std::vector<std::string>{"", "x"});
  CHECK(mustParse("a in (,x)").requirements()[0].values == std::vector<std::string>{"", "x"});
  CHECK(mustParse("a notin ()").requirements()[0].op == LabelOperator::NotIn);
  CHECK(mustParse("a in (x,,y)").requirements()[0].values == std::vector<std::string>{"", "x", "y"});
}

TEST_CASE("S2: label selector errors carry the apiserver's BadRequest text") {
  struct Row {
    const char* selector;
    std::string message;
  };
  const std::vector<Row> rows{
      {"a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"},
      {"=x", "found '=', expected: !, identifier, or 'end of string'"},
      {"a=b,", "found '', expected: identifier after ','"},
      {"a in (b", "unable to parse requirement: found '', expected: ',' or ')'"},
      {"a>x",
       "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be "
       "an integer"},
      {"-k=v", "unable to parse requirement: <nil>: Invalid value: \"-k\": " + kKeyRules},
      {"a=b$", "unable to parse requirement: values[0][a]: Invalid value: \"b$\": " + kValueRules},
      {"a=b c", "found 'c', expected: ',' or 'end of string'"},
      {"a in b", "unable to parse requirement: found 'b' expected: '('"},
      {"a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"},
      {"a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"},
      {"a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier"},
      {"a=(", "unable to parse requirement: found '(', expected: identifier"},
      {"!", "unable to parse requirement: found '', expected: identifier"},
      {"!a=b", "found '=', expected: ',' or 'end of string'"},
      {",a", "found ',', expected: !, identifier, or 'end of string'"},
      {"a,,b", "found ',', expected: identifier after ','"},
      {"a=", ""},  // valid: empty value
  };
  for (const auto& row : rows) {
    CAPTURE(row.selector);
    auto r = LabelSelector::parse(row.selector);
    if (row.message.empty()) {
      CHECK(r.has_value());
    } else {
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error() == row.message);
    }
  }
}

TEST_CASE("S2: key validation covers prefix, name length and slashes") {
  const std::string name64(64, 'a');
  CHECK(parseError(name64 + "=v") ==
        "unable to parse requirement: <nil>: Invalid value: \"" + name64 + "\": name part must be no more than 63 bytes");
  CHECK(parseError("/a=v") == "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty");
  CHECK(parseError("Example.com/a=v") ==
        "unable to parse requirement: <nil>: Invalid value: \"Example.com/a\": prefix part a lowercase RFC 1123 "
        "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  CHECK(parseError("a/=v") == "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; " +
                                  kKeyRules);
  CHECK(parseError("a/b/c=v") ==
        "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an "
        "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
  CHECK(mustParse("example.com/app=v").requirements()[0].key == "example.com/app");
  CHECK(mustParse(std::string(253 - 4, 'a') + ".com/" + std::string(63, 'b') + "=v").requirements().size() == 1);
}

TEST_CASE("S2: label selector lengths are worded in bytes like apimachinery's content.MaxLenError") {
  // A prefix one byte over the DNS-1123 subdomain limit, otherwise valid: only the length fails.
  const std::string prefix254 = std::string(250, 'a') + ".com";
  REQUIRE(prefix254.size() == 254);
  CHECK(parseError(prefix254 + "/k=v") == "unable to parse requirement: <nil>: Invalid value: \"" + prefix254 +
                                               "/k\": prefix part must be no more than 253 bytes");
  // Both a too-long name part and a too-long prefix, joined in IsLabelKey's order.
  const std::string name64(64, 'n');
  CHECK(parseError(prefix254 + "/" + name64 + " in (v)") ==
        "unable to parse requirement: <nil>: Invalid value: \"" + prefix254 + "/" + name64 +
            "\": prefix part must be no more than 253 bytes; name part must be no more than 63 bytes");
  // The limits are bytes, at the boundary.
  CHECK(mustParse(std::string(253 - 4, 'a') + ".com/k=" + std::string(63, 'v')).requirements().size() == 1);
  const std::string value64(64, 'v');
  CHECK(parseError("k notin (" + value64 + ")") ==
        "unable to parse requirement: values[0][k]: Invalid value: \"" + value64 + "\": must be no more than 63 bytes");
}

TEST_CASE("S2: value validation reports length and several problems joined like an aggregate") {
  const std::string value64(64, 'v');
  CHECK(parseError("a=" + value64) == "unable to parse requirement: values[0][a]: Invalid value: \"" + value64 +
                                          "\": must be no more than 63 bytes");
  CHECK(parseError("a in (b$,-c)") == "unable to parse requirement: [values[0][a]: Invalid value: \"-c\": " +
                                          kValueRules + ", values[1][a]: Invalid value: \"b$\": " + kValueRules + "]");
  CHECK(parseError("a>-1") == "unable to parse requirement: values[0][a]: Invalid value: \"-1\": " + kValueRules);
}

TEST_CASE("S1: Gt and Lt compare as 64-bit integers") {
  CHECK(selects("n>9", Labels{{"n", "10"}}));
  CHECK(selects("n<10", Labels{{"n", "9"}}));
  CHECK(selects("n>9", Labels{{"n", "007"}}) == false);
  CHECK(selects("n>1", Labels{{"n", "99999999999999999999"}}) == false);  // out of int64 range
  CHECK(parseError("n>99999999999999999999") ==
        "unable to parse requirement: values[0]: Invalid value: \"99999999999999999999\": for 'Gt', 'Lt' operators, "
        "the value must be an integer");
}

TEST_CASE("Label selector exposes the exact-match requirements an index can narrow by") {
  auto s = mustParse("tier in (a,b),app=web,env==prod,zone in (eu),x!=y,!gone");
  auto exact = s.exactMatches();
  CHECK(exact == std::vector<std::pair<std::string, std::string>>{{"app", "web"}, {"env", "prod"}, {"zone", "eu"}});
  CHECK(s.requiresExactMatch("app") == std::optional<std::string_view>("web"));
  CHECK_FALSE(s.requiresExactMatch("tier").has_value());
  CHECK_FALSE(s.requiresExactMatch("x").has_value());
  CHECK_FALSE(s.requiresExactMatch("nope").has_value());
  CHECK(mustParse("").empty());
  CHECK_FALSE(s.empty());
}
