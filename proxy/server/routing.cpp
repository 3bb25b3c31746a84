#include "proxy/server/routing.h"

#include <algorithm>

#include "proxy/server/health.h"

namespace proxy {

bool isLocalPath(std::string_view path) {
  return path == "/healthz" || path == "/livez" || path == "/readyz" || path == "/metrics" || path == "/debug/status";
}

bool isLongRunning(const RequestInfo& info) {
  if (info.verb == "watch" || info.verb == "proxy") return true;
  const std::string& s = info.subresource;
  return s == "attach" || s == "exec" || s == "proxy" || s == "log" || s == "portforward";
}

bool bodyIsLimited(const RequestInfo& info) {
  if (!info.is_resource_request) return false;
  const std::string& sub = info.subresource;
  return sub != "proxy" && sub != "exec" && sub != "attach" && sub != "portforward";
}

bool filterRefuses(const RequestFilter& filter, const RequestInfo& info, std::string_view method,
                   std::string_view target, const HeaderFields& headers) {
  // Health probes say only whether the proxy is up; a gateway answers them unauthenticated too.
  if (!filter.active() || isHealthPath(info.path)) return false;
  // Go's server answers a second Host header with 400 before kubectl's filter sees it.
  const auto host_headers = std::count_if(headers.begin(), headers.end(),
                                          [](const HeaderField& header) { return headerNameEquals(header.first, "Host"); });
  return host_headers > 1 || !filter.allows(method, target, findHeader(headers, "Host"));
}

}  // namespace proxy
