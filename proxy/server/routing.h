#pragma once
// Where a request goes before any handler sees it: the proxy's own paths, requests that
// kubectl proxy's filter refuses, and long-running requests that bypass the in-flight
// bound. Which resource requests the cache answers is read_route.h's and
// cache_serving.h's. Plain code (no Asio).

#include <string_view>

#include "proxy/http/header_filter.h"
#include "proxy/server/request_filter.h"
#include "proxy/request_info.h"

namespace proxy {

// /healthz, /livez, /readyz and /metrics: answered by the proxy itself.
bool isLocalPath(std::string_view path);

// The apiserver's BasicLongRunningRequestCheck: watch and proxy verbs, and the
// attach, exec, proxy, log and portforward subresources.
bool isLongRunning(const RequestInfo& info);

// Whether the apiserver would read this request's body into memory and so apply
// MaxRequestBodyBytes to it (handlers/rest.go limitedReadBody): API writes and
// their subresources. Connect subresources (proxy, exec, attach, portforward)
// stream their bodies and are not limited.
bool bodyIsLimited(const RequestInfo& info);

// True when the request filter (kubectl proxy's --accept-hosts and friends) refuses the
// request `method` `target` with `headers`, whose parsed path is `info.path`.
bool filterRefuses(const RequestFilter& filter, const RequestInfo& info, std::string_view method,
                   std::string_view target, const HeaderFields& headers);

}  // namespace proxy
