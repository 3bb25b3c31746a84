// Field selectors (S3): apimachinery pkg/fields parsing (terms split on unescaped
// commas, operators tried as "!=", "==", "=", values unescaped), then each term's
// field label converted by the type's rules (S4-S6, field_selector_rules.cpp).
#include "tests/apiserver/selectors/field_selector_rules.h"
#include "tests/apiserver/semantics.h"

#include <algorithm>

namespace testapi {

namespace {

struct Term {
  std::string field;
  std::string value;
  bool equal = true;  // false for "!="
};

struct SyntaxError {
  std::string message;
};

// Splits on commas that are not escaped; escapes stay in the terms.
std::vector<std::string> splitTerms(std::string_view s) {
  std::vector<std::string> terms;
  if (s.empty()) return terms;
  size_t start = 0;
  bool in_slash = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (in_slash) {
      in_slash = false;
    } else if (s[i] == '\\') {
      in_slash = true;
    } else if (s[i] == ',') {
      terms.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  terms.emplace_back(s.substr(start));
  return terms;
}

// The first position where any operator starts wins; there "!=" beats "==" beats "=".
bool splitTerm(std::string_view term, Term& out) {
  for (size_t i = 0; i < term.size(); ++i) {
    const std::string_view rest = term.substr(i);
    for (std::string_view op : {"!=", "==", "="}) {
      if (rest.substr(0, op.size()) == op) {
        out.field = std::string(term.substr(0, i));
        out.value = std::string(rest.substr(op.size()));
        out.equal = op != "!=";
        return true;
      }
    }
  }
  return false;
}

// fields.UnescapeValue: only \\, \, and \= are escapes; bare ',' and '=' are errors.
std::variant<std::string, SyntaxError> unescapeValue(std::string_view s) {
  std::string out;
  bool in_slash = false;
  for (char c : s) {
    if (in_slash) {
      if (c != '\\' && c != ',' && c != '=')
        return SyntaxError{"invalid field selector: invalid escape sequence: \\" + std::string(1, c)};
      out += c;
      in_slash = false;
    } else if (c == '\\') {
      in_slash = true;
    } else if (c == ',' || c == '=') {
      // Go formats the offending rune with %v, i.e. as its code point number.
      return SyntaxError{"invalid field selector: unescaped character in value: " +
                         std::to_string(static_cast<int>(c))};
    } else {
      out += c;
    }
  }
  if (in_slash) return SyntaxError{"invalid field selector: invalid escape sequence: \\"};
  return out;
}

std::variant<std::vector<Term>, SyntaxError> parseTerms(std::string_view text) {
  auto parts = splitTerms(text);
  std::sort(parts.begin(), parts.end());  // fields.ParseSelector sorts the raw terms
  std::vector<Term> terms;
  for (const auto& part : parts) {
    if (part.empty()) continue;
    Term t;
    if (!splitTerm(part, t))
      return SyntaxError{"invalid selector: '" + std::string(text) + "'; can't understand '" + part + "'"};
    auto value = unescapeValue(t.value);
    if (auto* e = std::get_if<SyntaxError>(&value)) return *e;
    t.value = std::move(std::get<std::string>(value));
    terms.push_back(std::move(t));
  }
  return terms;
}

class ParsedFieldSelector final : public FieldSelector {
 public:
  explicit ParsedFieldSelector(std::vector<Term> terms) : terms_(std::move(terms)) {}

  // testapi::FieldSelector
  bool matches(const Fields& fields) const override {
    return std::all_of(terms_.begin(), terms_.end(), [&](const Term& t) {
      const auto it = fields.find(t.field);
      const std::string_view have = it == fields.end() ? std::string_view() : std::string_view(it->second);
      return (have == t.value) == t.equal;  // a field the object lacks compares as ""
    });
  }
  bool empty() const override { return terms_.empty(); }
  std::optional<std::string> requiredValue(std::string_view field) const override {
    for (const auto& t : terms_) {
      if (t.equal && t.field == field) return t.value;
    }
    return std::nullopt;
  }

 private:
  std::vector<Term> terms_;  // canonical field labels, sorted by raw term text
};

}  // namespace

std::optional<ApiError> checkFieldSelectorSyntax(std::string_view text) {
  auto parsed = parseTerms(text);
  if (auto* e = std::get_if<SyntaxError>(&parsed)) return badRequest(e->message);
  return std::nullopt;
}

Result<std::shared_ptr<const FieldSelector>> parseFieldSelector(const ResourceDef& def, std::string_view text) {
  auto parsed = parseTerms(text);
  if (auto* e = std::get_if<SyntaxError>(&parsed)) return badRequest(e->message);
  auto terms = std::move(std::get<std::vector<Term>>(parsed));
  for (auto& t : terms) {
    auto converted = convertFieldLabel(def, t.field);
    if (converted.index() == 1) return badRequest(std::get<1>(converted));
    t.field = std::move(std::get<0>(converted));
  }
  return std::shared_ptr<const FieldSelector>(std::make_shared<ParsedFieldSelector>(std::move(terms)));
}

}  // namespace testapi
