#include "cache/query/query_values.h"

namespace cache {

namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> unescape(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size() || hexValue(s[i + 1]) < 0 || hexValue(s[i + 2]) < 0) return std::nullopt;
      out.push_back(static_cast<char>(hexValue(s[i + 1]) * 16 + hexValue(s[i + 2])));
      i += 3;
    } else {
      out.push_back(c == '+' && plus_is_space ? ' ' : c);
      ++i;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> queryUnescape(std::string_view s) { return unescape(s, true); }

std::string queryEscape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out += c;
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::optional<std::string> pathUnescape(std::string_view s) { return unescape(s, false); }

std::string escapePath(std::string_view path) {
  constexpr std::string_view kKept = "-._~$&+,/:;=@";
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(path.size());
  for (const char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    const bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      kKept.find(c) != std::string_view::npos;
    if (kept) {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
  }
  return out;
}

QueryValues QueryValues::parse(std::string_view raw_query) {
  QueryValues values;
  while (!raw_query.empty()) {
    const size_t amp = raw_query.find('&');
    std::string_view pair = raw_query.substr(0, amp);
    raw_query = amp == std::string_view::npos ? std::string_view{} : raw_query.substr(amp + 1);
    if (pair.empty() || pair.find(';') != std::string_view::npos) continue;
    const size_t eq = pair.find('=');
    auto key = queryUnescape(pair.substr(0, eq));
    if (!key) continue;
    auto value = queryUnescape(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1));
    if (!value) continue;
    values.pairs_.emplace_back(std::move(*key), std::move(*value));
  }
  return values;
}

std::optional<std::string_view> QueryValues::get(std::string_view key) const {
  for (const auto& [k, v] : pairs_) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

}  // namespace cache
