#pragma once
// In-cluster upstream, as client-go's rest.InClusterConfig finds it: the
// apiserver Service from KUBERNETES_SERVICE_HOST/PORT, and the pod's
// service-account token and CA from the kubelet-mounted directory.

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace config {

// nullopt when not running in a pod (either variable unset or empty).
// The token is passed as a *file* because projected tokens rotate (about
// hourly) and the proxy must re-read them. A missing ca.crt is tolerated, as
// in client-go, with a warning appended to `warnings`; a missing token is an
// error.
std::optional<UpstreamConfig> inClusterUpstream(const Environment& env, std::vector<std::string>& warnings);

}  // namespace config
