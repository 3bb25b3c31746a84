#include "cache/selectors/field_selector.h"

#include <algorithm>

namespace cache {

namespace {

// Splits on ',' not preceded by an escaping '\' (fields.splitTerms).
std::vector<std::string_view> splitTerms(std::string_view selector) {
  std::vector<std::string_view> terms;
  if (selector.empty()) return terms;
  size_t start = 0;
  bool in_slash = false;
  for (size_t i = 0; i < selector.size(); ++i) {
    const char c = selector[i];
    if (in_slash) {
      in_slash = false;
    } else if (c == '\\') {
      in_slash = true;
    } else if (c == ',') {
      terms.push_back(selector.substr(start, i - start));
      start = i + 1;
    }
  }
  terms.push_back(selector.substr(start));
  return terms;
}

struct SplitTerm {
  std::string_view lhs;
  FieldOperator op;
  std::string_view rhs;
};

// The first position where "!=", "==" or "=" starts, tried in that order (fields.splitTerm).
std::optional<SplitTerm> splitTerm(std::string_view term) {
  for (size_t i = 0; i < term.size(); ++i) {
    std::string_view rest = term.substr(i);
    if (rest.starts_with("!=")) return SplitTerm{term.substr(0, i), FieldOperator::NotEquals, rest.substr(2)};
    if (rest.starts_with("==")) return SplitTerm{term.substr(0, i), FieldOperator::DoubleEquals, rest.substr(2)};
    if (rest.starts_with("=")) return SplitTerm{term.substr(0, i), FieldOperator::Equals, rest.substr(1)};
  }
  return std::nullopt;
}

// fields.UnescapeValue: "\\", "\," and "\=" are the only escapes; a bare ',' or '=' is
// an error. Like Go, a value that needs no unescaping is returned byte for byte, and one
// that does is re-encoded rune by rune (invalid UTF-8 becomes U+FFFD).
bool unescapeValue(std::string_view s, std::string& out, std::string& error) {
  if (s.find_first_of("\\,=") == std::string_view::npos) {
    out.assign(s);
    return true;
  }
  out.clear();
  bool in_slash = false;
  for (size_t i = 0; i < s.size();) {
    auto [rune, width] = decodeUtf8(s, i);
    i += width;
    if (in_slash) {
      if (rune != '\\' && rune != ',' && rune != '=') {
        std::string sequence = "\\";
        appendUtf8(sequence, rune);
        error = "invalid field selector: invalid escape sequence: " + sequence;
        return false;
      }
      out.push_back(static_cast<char>(rune));
      in_slash = false;
    } else if (rune == '\\') {
      in_slash = true;
    } else if (rune == ',' || rune == '=') {
      // Go formats the rune with %v, i.e. as its code point number.
      error = "invalid field selector: unescaped character in value: " + std::to_string(rune);
      return false;
    } else {
      appendUtf8(out, rune);
    }
  }
  if (in_slash) {
    error = "invalid field selector: invalid escape sequence: \\";
    return false;
  }
  return true;
}

FieldRequirement::Source sourceOf(std::string_view field) {
  if (field == "metadata.name") return FieldRequirement::Source::Name;
  if (field == "metadata.namespace") return FieldRequirement::Source::Namespace;
  return FieldRequirement::Source::Field;
}

// The S5 rejection for one type family.
std::string unsupportedField(const FieldSpec& spec, std::string_view field) {
  switch (spec.error_style) {
    case FieldErrorStyle::NotKnownField:
      return goQuote(field) + " is not a known field selector: only \"metadata.name\", \"metadata.namespace\"";
    case FieldErrorStyle::LabelNotSupported:
      return "field label not supported: " + std::string(field);
    case FieldErrorStyle::BatchJob:
      return "field label " + goQuote(field) + " not supported for batchv1.Job";
    case FieldErrorStyle::ResourceSlice:
      return "field label not supported for " + spec.version + ", Kind=ResourceSlice: " + std::string(field);
  }
  return "field label not supported: " + std::string(field);
}

// Fields whose upstream value is not simply the JSON scalar at their path. Keyed by the
// built-in spec singletons, so a custom resource with a same-named field is unaffected.
struct Quirk {
  const FieldSpec* spec;
  std::string_view field;
  std::string_view zero_value;
  std::string_view fallback_field;
  bool always_empty;
};

const std::vector<Quirk>& quirks() {
  static const std::vector<Quirk> table = [] {
    auto spec = [](std::string_view group, std::string_view resource) {
      return FieldSpec::forBuiltin(group, "v1", resource, true).get();
    };
    return std::vector<Quirk>{
        // Booleans and integers are Go values in the registry's field set, so a field
        // omitted from the JSON compares as its zero value.
        {spec("", "pods"), "spec.hostNetwork", "false", "", false},
        {spec("", "nodes"), "spec.unschedulable", "false", "", false},
        {spec("", "replicationcontrollers"), "status.replicas", "0", "", false},
        {spec("batch", "jobs"), "status.successful", "0", "", false},
        // Accepted by the pod conversion, but PodToSelectableFields has no such key.
        {spec("", "pods"), "status.podIPs", "", "", true},
        // source = source.component, or reportingComponent when that is empty.
        {spec("", "events"), "source", "", "reportingComponent", false},
    };
  }();
  return table;
}

bool isAccepted(const FieldSpec& spec, std::string_view field) {
  if (field == "metadata.name") return true;
  // The default conversion (types without their own) accepts metadata.namespace even
  // for cluster-scoped types; their objects have an empty namespace to compare against.
  if (field == "metadata.namespace") return spec.namespaced || spec.error_style == FieldErrorStyle::NotKnownField;
  return std::any_of(spec.fields.begin(), spec.fields.end(), [&](const SelectableField& f) { return f.name == field; });
}

std::string_view compared(const FieldRequirement& r, const Fields& fields, std::string_view name, std::string_view ns) {
  switch (r.source) {
    case FieldRequirement::Source::Name: return name;
    case FieldRequirement::Source::Namespace: return ns;
    case FieldRequirement::Source::Field: break;
  }
  if (r.always_empty) return {};
  std::string_view value = lookup(fields, r.field).value_or(std::string_view{});
  if (value.empty() && !r.fallback_field.empty()) value = lookup(fields, r.fallback_field).value_or(std::string_view{});
  if (value.empty()) return r.zero_value;
  return value;
}

}  // namespace

FieldSelector::Result FieldSelector::parseSyntax(std::string_view selector) {
  auto terms = splitTerms(selector);
  std::sort(terms.begin(), terms.end());
  std::vector<FieldRequirement> requirements;
  for (auto term : terms) {
    if (term.empty()) continue;
    auto split = splitTerm(term);
    if (!split) {
      std::string error = "invalid selector: '";
      error.append(selector).append("'; can't understand '").append(term).append("'");
      return Result::failure(std::move(error));
    }
    FieldRequirement requirement;
    requirement.field = std::string(split->lhs);
    requirement.op = split->op;
    requirement.source = sourceOf(requirement.field);
    std::string error;
    if (!unescapeValue(split->rhs, requirement.value, error)) return Result::failure(std::move(error));
    requirements.push_back(std::move(requirement));
  }
  return FieldSelector(std::move(requirements));
}

FieldSelector::Result FieldSelector::bind(const FieldSpec& spec) const {
  std::vector<FieldRequirement> bound = requirements_;
  for (auto& r : bound) {
    auto alias = std::find_if(spec.aliases.begin(), spec.aliases.end(),
                              [&](const auto& a) { return a.first == r.field; });
    if (alias != spec.aliases.end()) {
      r.field = alias->second;
    } else if (!isAccepted(spec, r.field)) {
      return Result::failure(unsupportedField(spec, r.field));
    }
    r.source = sourceOf(r.field);
    for (const auto& quirk : quirks()) {
      if (quirk.spec != &spec || quirk.field != r.field) continue;
      r.zero_value = std::string(quirk.zero_value);
      r.fallback_field = std::string(quirk.fallback_field);
      r.always_empty = quirk.always_empty;
    }
  }
  return FieldSelector(std::move(bound));
}

FieldSelector::Result FieldSelector::parse(std::string_view selector, const FieldSpec& spec) {
  auto syntax = parseSyntax(selector);
  if (!syntax) return syntax;
  return syntax->bind(spec);
}

bool FieldSelector::matches(const Fields& fields, std::string_view name, std::string_view ns) const {
  for (const auto& r : requirements_) {
    const bool equal = compared(r, fields, name, ns) == r.value;
    if (equal == (r.op == FieldOperator::NotEquals)) return false;
  }
  return true;
}

std::optional<std::string_view> FieldSelector::requiredValue(std::string_view field) const {
  for (const auto& r : requirements_) {
    if (r.field == field && r.op != FieldOperator::NotEquals) return std::string_view(r.value);
  }
  return std::nullopt;
}

}  // namespace cache
