#pragma once
// kubectl proxy's request filter settings (--accept-hosts, --accept-paths,
// --reject-paths, --reject-methods): their defaults per mode, and the start-up check
// that every pattern compiles. The proxy compiles them again to match requests
// (proxy/server/request_filter.h), with the same grammar.

#include "config/config.h"
#include "config/settings.h"

namespace config {

// kubectl proxy's defaults (k8s.io/kubectl/pkg/proxy/proxy_server.go).
inline constexpr const char* kKubectlAcceptHosts[] = {"^localhost$", "^127\\.0\\.0\\.1$", "^\\[::1\\]$"};
inline constexpr const char* kKubectlAcceptPaths[] = {"^.*"};
inline constexpr const char* kKubectlRejectPaths[] = {"^/api/.*/pods/.*/exec", "^/api/.*/pods/.*/attach"};
inline constexpr const char* kKubectlRejectMethods[] = {"^$"};

// The four lists for `mode`, from `settings` where set, else:
//  - sidecar: kubectl proxy's defaults, accept-hosts also naming the --listen address
//    when it is another loopback address (127.0.0.2), which is what its clients send;
//  - gateway: unset, i.e. that check is off (every request is authenticated already).
// Throws ConfigError for a pattern that does not compile. Empty entries are dropped.
RequestFilterConfig requestFilter(const Settings& settings, Mode mode, const ListenAddress& listen);

}  // namespace config
