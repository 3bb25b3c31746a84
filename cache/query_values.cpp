#include "cache/query_values.h"

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

std::optional<std::string> pathUnescape(std::string_view s) { return unescape(s, false); }

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
