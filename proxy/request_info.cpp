#include "proxy/request_info.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "cache/selectors/field_selector.h"
#include "cache/query/query_values.h"
#include "proxy/query_params.h"

namespace proxy {
namespace {

std::vector<std::string> splitPath(std::string_view path) {
  std::vector<std::string> parts;
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return parts;
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    parts.emplace_back(path.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

std::string toLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string verbForMethod(std::string_view method) {
  if (method == "POST") return "create";
  if (method == "GET" || method == "HEAD") return "get";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  return "";
}


// The name a fieldSelector requires exactly (metadata.name=<n> or ==), "" when none:
// fields.ParseSelector and RequiresExactMatch as the apiserver's RequestInfoFactory
// uses them, through the parser the cache filters with, so that authorization and the
// cache agree on the name even with escapes ("a\\,b" names "a,b").
std::string exactNameFromFieldSelector(std::string_view selector) {
  const auto parsed = cache::FieldSelector::parseSyntax(selector);
  if (!parsed) return "";
  const std::optional<std::string_view> name = parsed->requiredValue("metadata.name");
  return name ? std::string(*name) : "";
}

}  // namespace

bool isValidPathSegmentName(std::string_view name) {
  if (name == "." || name == "..") return false;
  return name.find('/') == std::string_view::npos && name.find('%') == std::string_view::npos;
}

RequestInfo RequestInfo::parse(std::string_view method, std::string_view target, const cache::QueryValues& query) {
  RequestInfo info;
  size_t qmark = target.find('?');
  info.verb = toLower(method);
  // The apiserver sees Go's decoded URL.Path: "pods/web%2D0" names web-0 and
  // "pods/a%2Fb" is pod "a", subresource "b". A malformed escape is Go's own 400, which
  // the upstream gives: nothing here classifies such a path.
  std::optional<std::string> path = cache::pathUnescape(target.substr(0, qmark));
  if (!path) {
    info.path = std::string(target.substr(0, qmark));
    return info;
  }
  info.path = std::move(*path);

  std::vector<std::string> parts = splitPath(info.path);
  if (parts.size() < 3 || (parts[0] != "api" && parts[0] != "apis")) return info;
  size_t i = 0;
  info.api_prefix = parts[i++];
  if (info.api_prefix == "apis") {
    // The group consumes one more segment, so /apis/{group}/{version} alone
    // is discovery, not a resource.
    if (parts.size() - i < 3) return info;
    info.api_group = parts[i++];
  }
  info.is_resource_request = true;
  info.api_version = parts[i++];

  // Special verbs given as a path prefix: /watch/ (deprecated) and /proxy/.
  const bool verb_via_path_prefix = parts[i] == "watch" || parts[i] == "proxy";
  if (verb_via_path_prefix) {
    if (parts.size() - i < 2) {
      // The apiserver refuses to classify this; treat it as unknown.
      info.is_resource_request = false;
      info.verb = toLower(method);
      return info;
    }
    info.watch_prefix = parts[i] == "watch";
    info.verb = parts[i++];
  } else {
    info.verb = verbForMethod(method);
  }

  if (parts[i] == "namespaces") {
    if (parts.size() - i > 1) {
      info.namespace_ = parts[i + 1];
      // /namespaces/{ns}/status and /finalize are subresources of the namespace
      // object itself; anything else after {ns} is a namespaced resource.
      if (parts.size() - i > 2 && parts[i + 2] != "status" && parts[i + 2] != "finalize") i += 2;
    }
  }
  info.parts.assign(parts.begin() + static_cast<std::ptrdiff_t>(i), parts.end());

  if (info.parts.size() >= 3 && info.verb != "proxy") info.subresource = info.parts[2];
  if (info.parts.size() >= 2) info.name = info.parts[1];
  if (!info.parts.empty()) info.resource = info.parts[0];

  if (info.name.empty() && info.verb == "get") {
    info.verb = parseBoolParam(query.get("watch")) ? "watch" : "list";
    if (auto selector = query.get("fieldSelector")) {
      std::string name = exactNameFromFieldSelector(*selector);
      if (!name.empty() && isValidPathSegmentName(name)) info.name = std::move(name);
    }
  }
  if (info.name.empty() && info.verb == "delete") info.verb = "deletecollection";
  if (!verb_via_path_prefix && (info.verb == "list" || info.verb == "watch" || info.verb == "deletecollection")) {
    info.field_selector = std::string(query.get("fieldSelector").value_or(""));
    info.label_selector = std::string(query.get("labelSelector").value_or(""));
  }
  return info;
}

}  // namespace proxy
