#include "proxy/query_params.h"

#include <algorithm>
#include <cctype>

namespace proxy {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

std::string unescapeQueryComponent(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < in.size() && hexValue(in[i + 1]) >= 0 && hexValue(in[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hexValue(in[i + 1]) * 16 + hexValue(in[i + 2])));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

QueryParams::QueryParams(std::string_view raw_query) {
  while (!raw_query.empty()) {
    size_t amp = raw_query.find('&');
    std::string_view pair = raw_query.substr(0, amp);
    raw_query = amp == std::string_view::npos ? std::string_view{} : raw_query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    pairs_.emplace_back(unescapeQueryComponent(key), unescapeQueryComponent(value));
  }
}

std::optional<std::string_view> QueryParams::get(std::string_view key) const {
  for (const auto& [k, v] : pairs_) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

bool parseBoolParam(std::optional<std::string_view> value) {
  if (!value) return false;
  return !(*value == "0" || equalsIgnoreCase(*value, "false"));
}

}  // namespace proxy
