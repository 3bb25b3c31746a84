// The API path parser (RequestInfoFactory semantics) must never crash, and what it
// finds must be in the request: namespace, resource, name and subresource are whole
// path segments of the request path (or, for a list/watch, the name may come from a
// metadata.name field selector, contract E4), the remaining segments are the path's
// tail, and the verb is one the apiserver knows.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "cache/query/query_values.h"
#include "fuzz_check.h"
#include "proxy/request_info.h"

namespace {

constexpr std::string_view kMethods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "get"};

bool isSegment(std::string_view path, std::string_view segment) {
  const std::string needle = "/" + std::string(segment);
  for (size_t at = path.find(needle); at != std::string_view::npos; at = path.find(needle, at + 1)) {
    const size_t end = at + needle.size();
    if (end == path.size() || path[end] == '/') return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& part : parts) out.append("/").append(part);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view method = kMethods[data[0] % std::size(kMethods)];
  const std::string_view target(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t qmark = target.find('?');
  const cache::QueryValues query =
      cache::QueryValues::parse(qmark == std::string_view::npos ? std::string_view{} : target.substr(qmark + 1));
  const proxy::RequestInfo info = proxy::RequestInfo::parse(method, target, query);

  // The path is Go's decoded URL.Path; a malformed escape leaves it raw and unclassified.
  const std::string_view raw_path = target.substr(0, target.find('?'));
  const std::optional<std::string> decoded = cache::pathUnescape(raw_path);
  FUZZ_CHECK(info.path == (decoded ? *decoded : std::string(raw_path)));
  if (!decoded) FUZZ_CHECK(!info.is_resource_request);
  const proxy::RequestInfo again = proxy::RequestInfo::parse(method, target, query);
  FUZZ_CHECK(again.verb == info.verb && again.name == info.name && again.parts == info.parts);
  if (!info.is_resource_request) {
    FUZZ_CHECK(info.resource.empty() && info.name.empty() && info.namespace_.empty());
    return 0;
  }

  // Segments as the parser sees them: surrounding slashes do not count (Go's
  // strings.Split(strings.Trim(path, "/"), "/")).
  std::string_view trimmed = info.path;
  while (!trimmed.empty() && trimmed.front() == '/') trimmed.remove_prefix(1);
  while (!trimmed.empty() && trimmed.back() == '/') trimmed.remove_suffix(1);
  const std::string path = "/" + std::string(trimmed);
  FUZZ_CHECK(info.api_prefix == "api" || info.api_prefix == "apis");
  FUZZ_CHECK(info.api_prefix == "apis" || info.api_group.empty());
  for (const std::string* segment : {&info.api_prefix, &info.api_version, &info.resource}) {
    FUZZ_CHECK(segment->find('/') == std::string::npos);
    FUZZ_CHECK(isSegment(path, *segment));
  }
  if (!info.api_group.empty()) FUZZ_CHECK(isSegment(path, info.api_group));
  if (!info.namespace_.empty()) FUZZ_CHECK(isSegment(path, "namespaces/" + info.namespace_));
  if (!info.subresource.empty()) FUZZ_CHECK(info.parts.size() >= 3 && info.subresource == info.parts[2]);
  FUZZ_CHECK(!info.parts.empty() && info.resource == info.parts[0]);
  FUZZ_CHECK(path.ends_with(joined(info.parts)));
  if (info.parts.size() >= 2 && !info.parts[1].empty()) {
    FUZZ_CHECK(info.name == info.parts[1]);
  } else if (!info.name.empty()) {
    // Only a list or watch names an object through its field selector, and only by a
    // name that could be a path segment.
    FUZZ_CHECK(info.verb == "list" || info.verb == "watch");
    FUZZ_CHECK(info.name != "." && info.name != "..");
    FUZZ_CHECK(info.name.find_first_of("/%") == std::string::npos);
  }
  // "" is a method the apiserver has no verb for (OPTIONS).
  static const std::set<std::string> kVerbs = {"get",    "list",  "watch",            "create", "update", "patch",
                                               "delete", "proxy", "deletecollection", ""};
  FUZZ_CHECK(kVerbs.contains(info.verb));
  if (info.verb == "deletecollection") FUZZ_CHECK(info.name.empty());
  return 0;
}
