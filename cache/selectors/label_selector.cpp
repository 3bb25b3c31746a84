#include "cache/selectors/label_selector.h"

#include <algorithm>
#include <tuple>

#include "cache/selectors/label_selector_lexer.h"
#include "cache/selectors/name_validation.h"

namespace cache {

namespace {

using label_lexer::Lexer;
using label_lexer::ScannedItem;
using label_lexer::Token;

// Upstream's "found '<literal>', <expectation>" wording.
std::string found(std::string_view literal, std::string_view expectation) {
  std::string out = "found '";
  out.append(literal).append("', ").append(expectation);
  return out;
}

enum class Context { KeyAndOperator, Values };

// Recursive-descent parser over the pre-scanned tokens; error texts are upstream's.
class Parser {
 public:
  explicit Parser(std::string_view selector) {
    Lexer lexer(selector);
    while (true) {
      items_.push_back(lexer.lex());
      if (items_.back().token == Token::EndOfString) break;
    }
  }

  // Returns the requirements or sets `error`.
  std::vector<LabelRequirement> parse(std::string& error) {
    std::vector<LabelRequirement> requirements;
    while (true) {
      auto [token, literal] = lookahead(Context::Values);
      if (token == Token::Identifier || token == Token::DoesNotExist) {
        auto requirement = parseRequirement(error);
        if (!requirement) {
          error = "unable to parse requirement: " + error;
          return {};
        }
        requirements.push_back(std::move(*requirement));
        auto [next, next_literal] = consume(Context::Values);
        if (next == Token::EndOfString) return requirements;
        if (next != Token::Comma) {
          error = found(next_literal, "expected: ',' or 'end of string'");
          return {};
        }
        auto [after, after_literal] = lookahead(Context::Values);
        if (after != Token::Identifier && after != Token::DoesNotExist) {
          error = found(after_literal, "expected: identifier after ','");
          return {};
        }
      } else if (token == Token::EndOfString) {
        return requirements;
      } else {
        error = found(literal, "expected: !, identifier, or 'end of string'");
        return {};
      }
    }
  }

 private:
  // "in"/"notin" are plain identifiers where a value is expected.
  static Token inContext(Token token, Context context) {
    if (context == Context::Values && (token == Token::In || token == Token::NotIn)) return Token::Identifier;
    return token;
  }
  // Views point into items_, which does not change after construction.
  std::pair<Token, std::string_view> lookahead(Context context) const {
    const auto& item = items_[std::min(position_, items_.size() - 1)];
    return {inContext(item.token, context), item.literal};
  }
  std::pair<Token, std::string_view> consume(Context context) {
    const auto& item = items_[std::min(position_, items_.size() - 1)];
    if (position_ < items_.size()) ++position_;
    return {inContext(item.token, context), item.literal};
  }

  std::optional<LabelRequirement> parseRequirement(std::string& error) {
    LabelRequirement requirement;
    bool negated = false;
    auto [token, key] = consume(Context::Values);
    if (token == Token::DoesNotExist) {
      negated = true;
      std::tie(token, key) = consume(Context::Values);
    }
    if (token != Token::Identifier) {
      error = found(key, "expected: identifier");
      return std::nullopt;
    }
    // The parser validates keys against a nil field path, which Go prints as "<nil>".
    if (auto errs = isQualifiedName(key); !errs.empty()) {
      std::string detail;
      for (size_t i = 0; i < errs.size(); ++i) detail.append(i ? "; " : "").append(errs[i]);
      error = FieldError::invalid("<nil>", key, std::move(detail)).message();
      return std::nullopt;
    }
    requirement.key = std::string(key);
    auto next = lookahead(Context::Values).first;
    if (negated || next == Token::EndOfString || next == Token::Comma) {
      requirement.op = negated ? LabelOperator::DoesNotExist : LabelOperator::Exists;
      return requirement;
    }
    if (!parseOperator(requirement.op, error)) return std::nullopt;
    bool ok = (requirement.op == LabelOperator::In || requirement.op == LabelOperator::NotIn)
                  ? parseValues(requirement.values, error)
                  : parseExactValue(requirement.values, error);
    if (!ok) return std::nullopt;
    std::sort(requirement.values.begin(), requirement.values.end());
    requirement.values.erase(std::unique(requirement.values.begin(), requirement.values.end()), requirement.values.end());
    if (!validate(requirement, error)) return std::nullopt;
    return requirement;
  }

  bool parseOperator(LabelOperator& op, std::string& error) {
    auto [token, literal] = consume(Context::KeyAndOperator);
    switch (token) {
      case Token::In: op = LabelOperator::In; return true;
      case Token::Equals: op = LabelOperator::Equals; return true;
      case Token::DoubleEquals: op = LabelOperator::DoubleEquals; return true;
      case Token::GreaterThan: op = LabelOperator::GreaterThan; return true;
      case Token::LessThan: op = LabelOperator::LessThan; return true;
      case Token::NotIn: op = LabelOperator::NotIn; return true;
      case Token::NotEquals: op = LabelOperator::NotEquals; return true;
      default:
        error = found(literal, "expected: in, notin, =, ==, !=, gt, lt");
        return false;
    }
  }

  // "(" values ")" where "()" and stray commas stand for the empty value.
  bool parseValues(std::vector<std::string>& values, std::string& error) {
    auto [open, open_literal] = consume(Context::Values);
    if (open != Token::OpenPar) {
      error = "found '" + std::string(open_literal) + "' expected: '('";
      return false;
    }
    auto [token, literal] = lookahead(Context::Values);
    if (token == Token::ClosedPar) {
      consume(Context::Values);
      values.emplace_back();
      return true;
    }
    if (token != Token::Identifier && token != Token::Comma) {
      error = found(literal, "expected: ',', ')' or identifier");
      return false;
    }
    const std::string_view first_literal = literal;
    if (!parseIdentifiersList(values, error)) return false;
    if (consume(Context::Values).first != Token::ClosedPar) {
      // Upstream reports the token that opened the list here, not the offending one.
      error = found(first_literal, "expected: ')'");
      return false;
    }
    return true;
  }

  bool parseIdentifiersList(std::vector<std::string>& values, std::string& error) {
    while (true) {
      auto [token, literal] = consume(Context::Values);
      if (token == Token::Identifier) {
        values.emplace_back(literal);
        auto [next, next_literal] = lookahead(Context::Values);
        if (next == Token::Comma) continue;
        if (next == Token::ClosedPar) return true;
        error = found(next_literal, "expected: ',' or ')'");
        return false;
      }
      if (token == Token::Comma) {
        if (values.empty()) values.emplace_back();  // "(,"
        auto next = lookahead(Context::Values).first;
        if (next == Token::ClosedPar) {
          values.emplace_back();  // ",)"
          return true;
        }
        if (next == Token::Comma) {
          consume(Context::Values);
          values.emplace_back();  // ",,"
        }
        continue;
      }
      error = found(literal, "expected: ',', or identifier");
      return false;
    }
  }

  bool parseExactValue(std::vector<std::string>& values, std::string& error) {
    auto next = lookahead(Context::Values).first;
    if (next == Token::EndOfString || next == Token::Comma) {
      values.emplace_back();
      return true;
    }
    auto [token, literal] = consume(Context::Values);
    if (token == Token::Identifier) {
      values.emplace_back(literal);
      return true;
    }
    error = found(literal, "expected: identifier");
    return false;
  }

  // labels.NewRequirement's checks on the operands (the key was validated already).
  static bool validate(LabelRequirement& requirement, std::string& error) {
    std::vector<FieldError> errs;
    if (requirement.op == LabelOperator::GreaterThan || requirement.op == LabelOperator::LessThan) {
      for (size_t i = 0; i < requirement.values.size(); ++i) {
        if (auto bound = parseGoInt64(requirement.values[i])) {
          requirement.bound = *bound;
        } else {
          errs.push_back(FieldError::invalid("values[" + std::to_string(i) + "]", requirement.values[i],
                                             "for 'Gt', 'Lt' operators, the value must be an integer"));
        }
      }
    }
    for (size_t i = 0; i < requirement.values.size(); ++i) {
      auto msgs = isValidLabelValue(requirement.values[i]);
      if (msgs.empty()) continue;
      std::string detail;
      for (size_t m = 0; m < msgs.size(); ++m) detail.append(m ? "; " : "").append(msgs[m]);
      errs.push_back(FieldError::invalid("values[" + std::to_string(i) + "][" + requirement.key + "]",
                                         requirement.values[i], std::move(detail)));
    }
    if (errs.empty()) return true;
    error = aggregateErrors(errs);
    return false;
  }

  std::vector<ScannedItem> items_;
  size_t position_ = 0;
};

bool hasValue(const LabelRequirement& requirement, std::string_view value) {
  if (requirement.values.size() == 1) return requirement.values.front() == value;
  return std::binary_search(requirement.values.begin(), requirement.values.end(), value,
                            [](std::string_view a, std::string_view b) { return a < b; });
}

}  // namespace

bool LabelRequirement::matches(const Labels& labels) const { return matchesValue(lookup(labels, key)); }

bool LabelRequirement::matchesValue(std::optional<std::string_view> value) const {
  switch (op) {
    case LabelOperator::In:
    case LabelOperator::Equals:
    case LabelOperator::DoubleEquals:
      return value && hasValue(*this, *value);
    case LabelOperator::NotIn:
    case LabelOperator::NotEquals:
      return !value || !hasValue(*this, *value);
    case LabelOperator::Exists:
      return value.has_value();
    case LabelOperator::DoesNotExist:
      return !value;
    case LabelOperator::GreaterThan:
    case LabelOperator::LessThan: {
      if (!value) return false;
      auto actual = parseGoInt64(*value);
      if (!actual) return false;
      return op == LabelOperator::GreaterThan ? *actual > bound : *actual < bound;
    }
  }
  return false;
}

LabelSelector::Result LabelSelector::parse(std::string_view selector) {
  Parser parser(selector);
  std::string error;
  auto requirements = parser.parse(error);
  if (!error.empty()) return Result::failure(std::move(error));
  std::stable_sort(requirements.begin(), requirements.end(),
                   [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
  return LabelSelector(std::move(requirements));
}

// Requirements and labels are both sorted by key, so one forward pass finds every key:
// each search starts where the previous one ended.
bool LabelSelector::matches(const Labels& labels) const {
  auto from = labels.begin();
  for (const auto& requirement : requirements_) {
    from = std::lower_bound(from, labels.end(), requirement.key,
                            [](const auto& entry, std::string_view k) { return entry.first < k; });
    std::optional<std::string_view> value;
    if (from != labels.end() && from->first == requirement.key) value = from->second;
    if (!requirement.matchesValue(value)) return false;
  }
  return true;
}

std::vector<std::pair<std::string, std::string>> LabelSelector::exactMatches() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : requirements_) {
    const bool exact = r.op == LabelOperator::Equals || r.op == LabelOperator::DoubleEquals || r.op == LabelOperator::In;
    if (exact && r.values.size() == 1) out.emplace_back(r.key, r.values.front());
  }
  return out;
}

std::optional<std::string_view> LabelSelector::requiresExactMatch(std::string_view key) const {
  for (const auto& r : requirements_) {
    if (r.key != key) continue;
    const bool exact = r.op == LabelOperator::Equals || r.op == LabelOperator::DoubleEquals || r.op == LabelOperator::In;
    if (exact && r.values.size() == 1) return std::string_view(r.values.front());
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace cache
