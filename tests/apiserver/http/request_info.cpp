#include "tests/apiserver/http/request_info.h"

#include <vector>

namespace testapi {
namespace {

std::vector<std::string> splitPath(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string percentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hexValue(s[i + 1]) >= 0 &&
        hexValue(s[i + 2]) >= 0) {
      out += static_cast<char>(hexValue(s[i + 1]) * 16 + hexValue(s[i + 2]));
      i += 2;
    } else if (plus_is_space && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

Query parseQuery(std::string_view raw) {
  Query q;
  size_t i = 0;
  while (i <= raw.size()) {
    size_t j = raw.find('&', i);
    if (j == std::string_view::npos) j = raw.size();
    auto part = raw.substr(i, j - i);
    if (!part.empty()) {
      auto eq = part.find('=');
      std::string key = percentDecode(part.substr(0, eq), true);
      std::string val = eq == std::string_view::npos ? std::string() : percentDecode(part.substr(eq + 1), true);
      q.emplace(std::move(key), std::move(val));
    }
    i = j + 1;
  }
  return q;
}

RequestInfo parseRequestInfo(const HttpRequest& req) {
  RequestInfo info;
  auto parts = splitPath(req.path);
  size_t i = 0;
  if (parts.empty()) return info;
  if (parts[0] == "api") {
    info.api_prefix = "api";
    i = 1;
    if (parts.size() > 1) info.version = parts[1];
    i = 2;
  } else if (parts[0] == "apis") {
    info.api_prefix = "apis";
    if (parts.size() > 1) info.group = parts[1];
    if (parts.size() > 2) info.version = parts[2];
    i = 3;
  } else {
    return info;
  }
  if (parts.size() <= i) return info;
  if (parts[i] == "watch") {
    info.watch_prefix = true;
    ++i;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(std::min(i, parts.size())), parts.end());
  if (rest.empty()) return info;
  info.is_resource_request = true;
  if (rest[0] == "namespaces" && rest.size() >= 3) {
    info.ns = rest[1];
    info.resource = rest[2];
    if (rest.size() > 3) info.name = rest[3];
    if (rest.size() > 4) info.subresource = rest[4];
  } else {
    info.resource = rest[0];
    if (rest.size() > 1) info.name = rest[1];
    if (rest.size() > 2) info.subresource = rest[2];
    // /api/v1/namespaces/{name}: the namespace object itself lives in no namespace.
  }
  const auto& m = req.method;
  if (info.watch_prefix) {
    info.verb = "watch";
  } else if (m == "GET" || m == "HEAD") {
    auto* w = req.param("watch");
    bool watch = w && parseQueryBool(*w);
    // A named GET stays a GET whatever ?watch says: the apiserver's item route serves no
    // watches (only the deprecated /watch/ prefix does, W1).
    info.verb = info.name.empty() ? (watch ? "watch" : "list") : "get";
  } else if (m == "POST") {
    info.verb = "create";
  } else if (m == "PUT") {
    info.verb = "update";
  } else if (m == "PATCH") {
    info.verb = "patch";
  } else if (m == "DELETE") {
    info.verb = info.name.empty() ? "deletecollection" : "delete";
  } else {
    info.verb = m;
  }
  return info;
}

}  // namespace testapi
