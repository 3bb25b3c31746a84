#pragma once
// Field selectors as the apiserver parses, converts and evaluates them (contract S3-S6):
// a behavioural port of apimachinery pkg/fields (term splitting, escapes) plus the
// per-type field label conversion that decides which fields a resource accepts.
//
// Upstream checks a request in two steps with a validation step in between
// (decode -> ListOptions validation -> field label conversion), so both steps are
// exposed: parseSyntax() then bind(); parse() does both for callers that don't care.
//
// A FieldSelector is immutable once built and may be shared across threads.
// matches() does not allocate.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/selectors/field_error.h"
#include "cache/selectors/labels.h"
#include "cache/selectors/selectable_fields.h"

namespace cache {

enum class FieldOperator { Equals, DoubleEquals, NotEquals };

struct FieldRequirement {
  std::string field;  // canonical spelling after bind() ("spec.host" became "spec.nodeName")
  FieldOperator op = FieldOperator::Equals;
  std::string value;  // unescaped

  // Where the compared value comes from; set by bind().
  enum class Source { Name, Namespace, Field } source = Source::Field;
  // Compared instead of an empty/missing value: upstream renders some integer and
  // boolean fields from Go zero values ("0", "false") when the JSON omits them.
  std::string zero_value;
  // Another field consulted when this one is empty (core events: source.component
  // falls back to reportingComponent).
  std::string fallback_field;
  // Accepted by the conversion but absent from the registry's field set: always "".
  bool always_empty = false;
};

class FieldSelector {
 public:
  using Result = ParseResult<FieldSelector>;

  // The empty selector; matches everything.
  FieldSelector() = default;

  // fields.ParseSelector: terms split on unescaped ',', sorted, each split at the first
  // "!=", "==" or "=", values unescaped. Fields are not checked here.
  static Result parseSyntax(std::string_view selector);
  // The field label conversion for one resource: rejects unknown fields with the S5
  // text for spec.error_style, resolves aliases and binds each term to its source.
  Result bind(const FieldSpec& spec) const;
  // parseSyntax() then bind().
  static Result parse(std::string_view selector, const FieldSpec& spec);

  // `fields` holds the object's extracted selectable fields; name and namespace come
  // from its metadata. An unbound selector compares every field through `fields`.
  bool matches(const Fields& fields, std::string_view name, std::string_view ns) const;
  bool empty() const { return requirements_.empty(); }
  // Terms in upstream's (sorted) order.
  const std::vector<FieldRequirement>& requirements() const { return requirements_; }
  // fields.Selector.RequiresExactMatch: the value of the first `field=v` / `field==v`
  // term, for index lookups (metadata.namespace, metadata.name, spec.nodeName).
  std::optional<std::string_view> requiredValue(std::string_view field) const;

 private:
  explicit FieldSelector(std::vector<FieldRequirement> requirements) : requirements_(std::move(requirements)) {}
  std::vector<FieldRequirement> requirements_;
};

}  // namespace cache
