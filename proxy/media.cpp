#include "proxy/media.h"

#include <cstdlib>
#include <tuple>

namespace proxy {
namespace {

// goautoneg's nextSplitElement: the text before the first `sep` and the text after it.
std::pair<std::string_view, std::string_view> splitOnce(std::string_view s, char sep) {
  const size_t at = s.find(sep);
  if (at == std::string_view::npos) return {s, {}};
  return {s.substr(0, at), s.substr(at + 1)};
}

// goautoneg trims spaces only, not tabs.
std::string_view trimSpaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// net/http hands handlers a field value without surrounding spaces and tabs.
std::string_view trimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// strconv.ParseFloat(value, 32), 0 on failure (goautoneg ignores the error).
double parseQuality(std::string_view value) {
  const std::string text(value);
  char* end = nullptr;
  const double q = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && !text.empty() ? q : 0.0;
}

// One entry; false when goautoneg drops it.
bool parseRange(std::string_view part, MediaRange& range) {
  auto [media_range, params] = splitOnce(trimSpaces(part), ';');
  auto [type, rest] = splitOnce(media_range, '/');
  range.type = std::string(trimSpaces(type));
  if (rest.empty()) {
    if (range.type != "*") return false;  // "text" alone is dropped; "*" means "*/*"
    range.subtype.assign(1, '*');
  } else {
    auto [subtype, extra] = splitOnce(rest, '/');
    if (!extra.empty()) return false;  // "a/b/c"
    range.subtype = std::string(trimSpaces(subtype));
  }
  while (!params.empty()) {
    std::string_view param;
    std::tie(param, params) = splitOnce(params, ';');
    auto [key, value] = splitOnce(param, '=');
    if (value.empty() || value.find('=') != std::string_view::npos) continue;  // "k", "k=", "k=v=w"
    key = trimSpaces(key);
    if (key == "q") {
      range.q = parseQuality(value);
    } else {
      range.params.emplace_back(std::string(key), std::string(trimSpaces(value)));
    }
  }
  return true;
}

// goautoneg's accept_slice.Less, as written (higher quality, then a concrete type, then a
// concrete subtype, first).
bool before(const MediaRange& a, const MediaRange& b) {
  if (a.q > b.q) return true;
  if (a.type != "*" && b.type == "*") return true;
  if (a.subtype != "*" && b.subtype == "*") return true;
  return false;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

const std::string* MediaRange::param(std::string_view key) const {
  const std::string* found = nullptr;
  for (const auto& [k, v] : params) {
    if (k == key) found = &v;
  }
  return found;
}

bool MediaRange::is(std::string_view t, std::string_view s) const { return type == t && subtype == s; }

std::string MediaRange::mediaType() const {
  std::string out;
  out.reserve(type.size() + 1 + subtype.size());
  out.append(type).append(1, '/').append(subtype);
  for (char& c : out) c = lower(c);
  return out;
}

AcceptHeader AcceptHeader::parse(std::string_view header) {
  AcceptHeader out;
  header = trimBlanks(header);
  out.raw_ = std::string(header);
  while (!header.empty()) {
    std::string_view part;
    std::tie(part, header) = splitOnce(header, ',');
    MediaRange range;
    if (parseRange(part, range)) out.ranges_.push_back(std::move(range));
  }
  return out;
}

std::vector<const MediaRange*> AcceptHeader::byQuality() const {
  std::vector<const MediaRange*> out;
  out.reserve(ranges_.size());
  for (const MediaRange& r : ranges_) out.push_back(&r);
  // sort.Sort of a short slice is Go's insertion sort, which this is step for step (the
  // Less above is not a strict weak ordering, so the algorithm decides the result).
  for (size_t i = 1; i < out.size(); ++i) {
    for (size_t j = i; j > 0 && before(*out[j], *out[j - 1]); --j) std::swap(out[j], out[j - 1]);
  }
  return out;
}

}  // namespace proxy
