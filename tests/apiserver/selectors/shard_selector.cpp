#include "tests/apiserver/selectors/shard_selector.h"

#include <cstdint>
#include <cstdio>
#include <optional>

namespace testapi {
namespace {

const std::string kUid = "object.metadata.uid";
const std::string kNamespace = "object.metadata.namespace";
const std::string kTwoTo64 = "0x10000000000000000";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// Go's %q of a plain string.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Splits `s` at `sep` where it is outside quotes and parentheses; nullopt for an
// unterminated quote or unbalanced parentheses.
std::optional<std::vector<std::string_view>> splitTopLevel(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> parts;
  int depth = 0;
  char quote = 0;
  size_t begin = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = c;
    else if (c == '(') ++depth;
    else if (c == ')' && --depth < 0) return std::nullopt;
    else if (depth == 0 && s.substr(i, sep.size()) == sep) {
      parts.push_back(s.substr(begin, i - begin));
      begin = i + sep.size();
      i += sep.size() - 1;
    }
  }
  if (quote || depth != 0) return std::nullopt;
  parts.push_back(s.substr(begin));
  return parts;
}

bool isPathChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

// apiserver extractHexLiteral's checks, on a quoted literal.
std::optional<std::string> hexLiteral(std::string_view arg, const std::string& name, std::string& error) {
  if (arg.size() < 2 || (arg.front() != '\'' && arg.front() != '"') || arg.back() != arg.front()) {
    error = name + " must be a string literal (e.g. '0xff'), got expression kind " +
            (arg.empty() || !isPathChar(arg.front()) ? "CallKind" : "IdentKind");
    return std::nullopt;
  }
  const std::string s(arg.substr(1, arg.size() - 2));
  if (s.rfind("0x", 0) != 0) {
    error = name + " must have '0x' prefix, got " + quoted(s);
    return std::nullopt;
  }
  const std::string hex = s.substr(2);
  if (hex.empty()) {
    error = name + ": hex value is required after '0x'";
    return std::nullopt;
  }
  if (hex.size() > 17) {
    error = name + ": hex value too long (" + std::to_string(hex.size()) + " chars, max 17): " + quoted(hex);
    return std::nullopt;
  }
  for (char c : hex) {
    if ((c < '0' || c > '9') && (c < 'a' || c > 'f')) {
      error = name + ": invalid hex character " + quoted(std::string(1, c)) + " in " + quoted(s);
      return std::nullopt;
    }
  }
  if (hex.size() == 17 && s != kTwoTo64) {
    error = name + ": 17-digit hex value must be '0x10000000000000000' (2^64), got " + quoted(s);
    return std::nullopt;
  }
  if (hex.size() < 16) {
    error = name + " must be a 0x-prefixed 16-digit hex value, got " + quoted(s) + " (did you mean " +
            quoted("0x" + std::string(16 - hex.size(), '0') + hex) + "?)";
    return std::nullopt;
  }
  return s;
}

// Canonical hex order: the 17-digit 2^64 above every 16-digit value.
bool hexLess(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

struct Term {
  std::string key;
  ShardSelector::Range range;
};

std::optional<Term> parseTerm(std::string_view text, std::string& error) {
  text = trim(text);
  const size_t open = text.find('(');
  if (open == std::string_view::npos || text.back() != ')') {
    error = "unexpected expression kind IdentKind; expected shardRange() call or || operator";
    return std::nullopt;
  }
  const std::string_view function = trim(text.substr(0, open));
  if (function != "shardRange") {
    error = "unsupported function " + quoted(function) + "; only shardRange() and || are allowed";
    return std::nullopt;
  }
  const auto args = splitTopLevel(text.substr(open + 1, text.size() - open - 2), ",");
  if (!args) {
    error = "CEL parse error: Syntax error: extraneous input ')'";
    return std::nullopt;
  }
  const size_t count = args->size() == 1 && trim((*args)[0]).empty() ? 0 : args->size();
  if (count != 3) {
    error = "shardRange() requires exactly 3 arguments, got " + std::to_string(count);
    return std::nullopt;
  }
  Term term;
  term.key = std::string(trim((*args)[0]));
  for (char c : term.key) {
    if (!isPathChar(c)) {
      error = "shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind CallKind";
      return std::nullopt;
    }
  }
  if (term.key != kUid && term.key != kNamespace) {
    error = "unsupported field path " + quoted(term.key) + "; supported: object.metadata.uid, object.metadata.namespace";
    return std::nullopt;
  }
  auto start = hexLiteral(trim((*args)[1]), "hexStart", error);
  if (!start) return std::nullopt;
  auto end = hexLiteral(trim((*args)[2]), "hexEnd", error);
  if (!end) return std::nullopt;
  if (!hexLess(*start, *end)) {
    error = "shard range start " + *start + " must be less than end " + *end;
    return std::nullopt;
  }
  term.range = {*start, *end};
  return term;
}

std::string fnv1a64Hex(std::string_view value) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : value) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::variant<ShardSelector, std::string> parseShardSelector(std::string_view text) {
  if (trim(text).empty()) return std::string("CEL parse error: Syntax error: mismatched input '<EOF>'");
  const auto terms = splitTopLevel(text, "||");
  if (!terms) return std::string("CEL parse error: Syntax error: token recognition error");
  ShardSelector selector;
  std::string error;
  for (std::string_view text_term : *terms) {
    if (trim(text_term).empty()) return std::string("CEL parse error: Syntax error: mismatched input '||'");
    std::optional<Term> term = parseTerm(text_term, error);
    if (!term) return error;
    if (!selector.key_.empty() && selector.key_ != term->key)
      return "all shard ranges must use the same field, got " + quoted(selector.key_) + " and " + quoted(term->key);
    selector.key_ = term->key;
    selector.ranges_.push_back(term->range);
  }
  return selector;
}

bool ShardSelector::matches(const StoredObject& obj) const {
  const std::string hash = fnv1a64Hex(key_ == kUid ? obj.uid : obj.ns);
  for (const Range& r : ranges_) {
    if (!hexLess(hash, r.start) && hexLess(hash, r.end)) return true;
  }
  return false;
}

std::string ShardSelector::str() const {
  std::string out;
  for (const Range& r : ranges_) {
    if (!out.empty()) out += " || ";
    out += "shardRange(" + key_ + ", '" + r.start + "', '" + r.end + "')";
  }
  return out;
}

}  // namespace testapi
