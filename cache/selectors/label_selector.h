#pragma once
// Label selectors as the apiserver parses and evaluates them (contract S1, S2): a
// behavioural port of apimachinery pkg/labels (lexer, parser, requirement validation,
// matching). Parse errors carry the exact text upstream puts into its 400 BadRequest.
//
// A parsed LabelSelector is immutable, so one instance may be shared by any number of
// threads (one per LIST or watcher) without locking. matches() does not allocate.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/selectors/field_error.h"
#include "cache/selectors/labels.h"

namespace cache {

enum class LabelOperator { Equals, DoubleEquals, NotEquals, In, NotIn, Exists, DoesNotExist, GreaterThan, LessThan };

// One comma-separated term of a selector.
struct LabelRequirement {
  std::string key;
  LabelOperator op = LabelOperator::Exists;
  // Sorted and unique (upstream keeps them in a string set); exactly one for
  // =, ==, !=, >, <; at least one for in/notin ("in ()" is the single empty value);
  // none for exists / does-not-exist.
  std::vector<std::string> values;
  // The integer operand of > and <, validated at parse time.
  int64_t bound = 0;

  bool matches(const Labels& labels) const;
  // `value` is the object's value for `key`, nullopt when the label is absent.
  bool matchesValue(std::optional<std::string_view> value) const;
};

class LabelSelector {
 public:
  using Result = ParseResult<LabelSelector>;

  // The empty selector; matches everything.
  LabelSelector() = default;

  // labels.Parse. On failure the error is the BadRequest message, e.g.
  // "unable to parse requirement: found '', expected: ',' or ')'".
  static Result parse(std::string_view selector);

  // True iff every requirement matches (an empty selector matches everything).
  bool matches(const Labels& labels) const;
  bool empty() const { return requirements_.empty(); }
  // Requirements sorted by key (stable for equal keys), as upstream sorts them.
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }

  // Requirements an index can narrow by: `k=v`, `k==v` and single-value `k in (v)`.
  // Every matching object carries label k with value v, for each returned pair.
  std::vector<std::pair<std::string, std::string>> exactMatches() const;
  // labels.Selector.RequiresExactMatch: the value `key` must have, if one is implied.
  std::optional<std::string_view> requiresExactMatch(std::string_view key) const;

 private:
  explicit LabelSelector(std::vector<LabelRequirement> requirements) : requirements_(std::move(requirements)) {}
  std::vector<LabelRequirement> requirements_;
};

}  // namespace cache
