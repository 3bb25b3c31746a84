#include "cache/selectors/field_selector.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using cache::FieldOperator;
using cache::Fields;
using cache::FieldSelector;
using cache::FieldSpec;

std::shared_ptr<const FieldSpec> pods() { return FieldSpec::forBuiltin("", "v1", "pods", true); }

FieldSelector mustParse(std::string_view s, const FieldSpec& spec) {
  auto r = FieldSelector::parse(s, spec);
  INFO("selector: ", std::string(s), " error: ", r.has_value() ? std::string() : r.error());
  REQUIRE(r.has_value());
  return *r;
}

}  // namespace

TEST_CASE("S3: operators are searched as '!=', '==', '=' and values may be empty or escaped") {
  struct Row {
    const char* selector;
    const char* field;
    FieldOperator op;
    const char* value;
  };
  const std::vector<Row> rows{
      {"spec.nodeName=n1", "spec.nodeName", FieldOperator::Equals, "n1"},
      {"spec.nodeName==n1", "spec.nodeName", FieldOperator::DoubleEquals, "n1"},
      {"spec.nodeName!=n1", "spec.nodeName", FieldOperator::NotEquals, "n1"},
      {"spec.nodeName=", "spec.nodeName", FieldOperator::Equals, ""},
      {"spec.nodeName!=", "spec.nodeName", FieldOperator::NotEquals, ""},
      {"spec.nodeName===x", "spec.nodeName", FieldOperator::DoubleEquals, "=x"},  // fails unescape below
  };
  for (const auto& row : rows) {
    CAPTURE(row.selector);
    auto r = FieldSelector::parseSyntax(row.selector);
    if (std::string_view(row.value) == "=x") {
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error() == "invalid field selector: unescaped character in value: 61");
      continue;
    }
    REQUIRE(r.has_value());
    REQUIRE(r->requirements().size() == 1);
    CHECK(r->requirements()[0].field == row.field);
    CHECK(r->requirements()[0].op == row.op);
    CHECK(r->requirements()[0].value == row.value);
  }
}

TEST_CASE("S3: backslash escapes ',', '=' and '\\' inside values") {
  auto r = FieldSelector::parseSyntax("metadata.name=a\\,b\\=c\\\\d,type=x");
  REQUIRE(r.has_value());
  REQUIRE(r->requirements().size() == 2);
  CHECK(r->requirements()[0].field == "metadata.name");
  CHECK(r->requirements()[0].value == "a,b=c\\d");
  CHECK(r->requirements()[1].value == "x");

  CHECK(FieldSelector::parseSyntax("a=b\\x").error() == "invalid field selector: invalid escape sequence: \\x");
  CHECK(FieldSelector::parseSyntax("a=b\\").error() == "invalid field selector: invalid escape sequence: \\");
  CHECK(FieldSelector::parseSyntax("a!=b=c").error() == "invalid field selector: unescaped character in value: 61");
}

TEST_CASE("S3: a term without an operator is rejected with the whole selector quoted") {
  CHECK(FieldSelector::parseSyntax("metadata.name=a,bogus").error() ==
        "invalid selector: 'metadata.name=a,bogus'; can't understand 'bogus'");
  // Terms are sorted before they are checked, so the first bad term in sort order is named.
  CHECK(FieldSelector::parseSyntax("zz,aa").error() == "invalid selector: 'zz,aa'; can't understand 'aa'");
  CHECK(FieldSelector::parseSyntax("").has_value());
  CHECK(FieldSelector::parseSyntax(",,").has_value());
  CHECK(FieldSelector::parseSyntax(",,")->empty());
}

TEST_CASE("S3: matching compares strings, missing fields compare as empty") {
  auto s = mustParse("spec.nodeName=", *pods());
  CHECK(s.matches(Fields{}, "p", "default"));
  CHECK(s.matches(Fields{{"spec.nodeName", ""}}, "p", "default"));
  CHECK_FALSE(s.matches(Fields{{"spec.nodeName", "n1"}}, "p", "default"));

  auto ne = mustParse("status.phase!=Running,metadata.namespace=default", *pods());
  CHECK(ne.matches(Fields{{"status.phase", "Pending"}}, "p", "default"));
  CHECK_FALSE(ne.matches(Fields{{"status.phase", "Running"}}, "p", "default"));
  CHECK_FALSE(ne.matches(Fields{{"status.phase", "Pending"}}, "p", "kube-system"));

  auto byName = mustParse("metadata.name==web-0", *pods());
  CHECK(byName.matches(Fields{}, "web-0", "default"));
  CHECK_FALSE(byName.matches(Fields{}, "web-1", "default"));
  CHECK(FieldSelector{}.matches(Fields{}, "x", "y"));
}

TEST_CASE("S4: requiredValue exposes equality terms for index lookups") {
  auto s = mustParse("spec.host=n1,metadata.namespace==ns,metadata.name!=x", *pods());
  CHECK(s.requiredValue("spec.nodeName") == std::optional<std::string_view>("n1"));
  CHECK(s.requiredValue("metadata.namespace") == std::optional<std::string_view>("ns"));
  CHECK_FALSE(s.requiredValue("metadata.name").has_value());
  CHECK_FALSE(s.requiredValue("status.phase").has_value());
}

TEST_CASE("S4: pods accept spec.host as an alias of spec.nodeName") {
  auto s = mustParse("spec.host=node-1", *pods());
  REQUIRE(s.requirements().size() == 1);
  CHECK(s.requirements()[0].field == "spec.nodeName");
  CHECK(s.matches(Fields{{"spec.nodeName", "node-1"}}, "p", "ns"));
}

TEST_CASE("S4: fields rendered from Go zero values match their zero value when omitted from the JSON") {
  CHECK(mustParse("spec.hostNetwork=false", *pods()).matches(Fields{{"spec.hostNetwork", ""}}, "p", "ns"));
  CHECK(mustParse("spec.hostNetwork=true", *pods()).matches(Fields{{"spec.hostNetwork", "true"}}, "p", "ns"));
  auto nodes = FieldSpec::forBuiltin("", "v1", "nodes", false);
  CHECK(mustParse("spec.unschedulable=false", *nodes).matches(Fields{}, "n", ""));
  auto jobs = FieldSpec::forBuiltin("batch", "v1", "jobs", true);
  CHECK(mustParse("status.successful=0", *jobs).matches(Fields{}, "j", "ns"));
  CHECK(mustParse("status.successful=3", *jobs).matches(Fields{{"status.successful", "3"}}, "j", "ns"));
  auto rcs = FieldSpec::forBuiltin("", "v1", "replicationcontrollers", true);
  CHECK(mustParse("status.replicas=0", *rcs).matches(Fields{}, "r", "ns"));
  // status.podIPs is accepted but never selectable: it always compares as "".
  CHECK(mustParse("status.podIPs=", *pods()).matches(Fields{{"status.podIPs", "10.0.0.1"}}, "p", "ns"));
  // A custom resource field of the same name keeps plain semantics.
  auto cr = FieldSpec::forCustomResource(true, {".spec.hostNetwork"});
  CHECK_FALSE(mustParse("spec.hostNetwork=false", *cr).matches(Fields{}, "c", "ns"));
}

TEST_CASE("S4: core event source is source.component, falling back to reportingComponent") {
  auto events = FieldSpec::forBuiltin("", "v1", "events", true);
  auto s = mustParse("source=kubelet", *events);
  CHECK(s.matches(Fields{{"reportingComponent", "x"}, {"source", "kubelet"}}, "e", "ns"));
  CHECK(s.matches(Fields{{"reportingComponent", "kubelet"}, {"source", ""}}, "e", "ns"));
  CHECK_FALSE(s.matches(Fields{{"reportingComponent", "kubelet"}, {"source", "other"}}, "e", "ns"));
}
