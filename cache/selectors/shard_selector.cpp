#include "cache/selectors/shard_selector.h"

#include <cctype>

namespace cache {
namespace {

// A cursor over the selector's text; every step skips CEL's whitespace first.
struct Cursor {
  std::string_view text;
  size_t at = 0;

  void skipSpace() {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r' ||
                                text[at] == '\f')) {
      ++at;
    }
  }
  bool take(std::string_view token) {
    skipSpace();
    if (text.substr(at, token.size()) != token) return false;
    at += token.size();
    return true;
  }
  bool done() {
    skipSpace();
    return at == text.size();
  }
  // A dotted identifier path without spaces inside (object.metadata.uid).
  std::optional<std::string_view> path() {
    skipSpace();
    const size_t begin = at;
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
    while (at < text.size() && ident(text[at])) ++at;
    if (at == begin) return std::nullopt;
    return text.substr(begin, at - begin);
  }
  // A quoted literal without escapes: its characters.
  std::optional<std::string_view> literal() {
    skipSpace();
    if (at >= text.size() || (text[at] != '\'' && text[at] != '"')) return std::nullopt;
    const char quote = text[at];
    const size_t end = text.find(quote, at + 1);
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view inside = text.substr(at + 1, end - at - 1);
    if (inside.find('\\') != std::string_view::npos || inside.find('\n') != std::string_view::npos) {
      return std::nullopt;
    }
    at = end + 1;
    return inside;
  }
};

// extractHexLiteral's rule: 0x and exactly 16 lowercase hex digits, or 2^64.
bool boundOf(std::string_view literal, bool& is_2_64, uint64_t& value) {
  is_2_64 = literal == "0x10000000000000000";
  if (is_2_64) return true;
  if (literal.size() != 18 || literal.substr(0, 2) != "0x") return false;
  value = 0;
  for (char c : literal.substr(2)) {
    if (c >= '0' && c <= '9') {
      value = value * 16 + static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      value = value * 16 + static_cast<uint64_t>(c - 'a' + 10);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

uint64_t shardHash(std::string_view value) {
  uint64_t hash = 14695981039346656037ULL;  // FNV-1a 64 offset basis
  for (unsigned char c : value) {
    hash ^= c;
    hash *= 1099511628211ULL;  // FNV 64 prime
  }
  return hash;
}

std::optional<ShardSelector> ShardSelector::parse(std::string_view text) {
  Cursor in{text};
  ShardSelector selector;
  std::string_view key;
  do {
    if (!in.take("shardRange") || !in.take("(")) return std::nullopt;
    const auto path = in.path();
    if (!path || (!key.empty() && *path != key)) return std::nullopt;
    if (*path != "object.metadata.uid" && *path != "object.metadata.namespace") return std::nullopt;
    key = *path;
    if (!in.take(",")) return std::nullopt;
    const auto start = in.literal();
    if (!start || !in.take(",")) return std::nullopt;
    const auto end = in.literal();
    if (!end || !in.take(")")) return std::nullopt;
    Range range;
    bool start_is_2_64 = false;
    if (!boundOf(*start, start_is_2_64, range.start) || start_is_2_64) return std::nullopt;  // start < end fails
    if (!boundOf(*end, range.end_is_2_64, range.end)) return std::nullopt;
    if (!range.end_is_2_64 && range.start >= range.end) return std::nullopt;
    selector.ranges_.push_back(range);
    if (!selector.canonical_.empty()) selector.canonical_ += " || ";
    selector.canonical_ += "shardRange(" + std::string(key) + ", '" + std::string(*start) + "', '" +
                           std::string(*end) + "')";
  } while (in.take("||"));
  if (!in.done()) return std::nullopt;
  selector.field_ = key == "object.metadata.uid" ? Field::Uid : Field::Namespace;
  return selector;
}

bool ShardSelector::matches(std::string_view uid, std::string_view namespace_name) const {
  if (ranges_.empty()) return true;
  const uint64_t hash = shardHash(field_ == Field::Uid ? uid : namespace_name);
  for (const Range& range : ranges_) {
    if (range.contains(hash)) return true;
  }
  return false;
}

}  // namespace cache
