#pragma once
// Picks the upstream apiserver, in this order:
//   1. --upstream URL: no credentials except those the flags below give;
//   2. a kubeconfig: --kubeconfig, else the first existing file in
//      $KUBECONFIG, else ~/.kube/config if it exists;
//   3. in-cluster (KUBERNETES_SERVICE_HOST/PORT plus the service account);
//   4. otherwise an error.
// Then kubectl's credential flags (--token, --token-file, --certificate-authority,
// --client-certificate/--client-key, --tls-server-name,
// --insecure-skip-tls-verify) and --connect-timeout override field by field;
// see upstream_overrides.h.

#include <string>
#include <vector>

#include "config/config.h"
#include "config/settings.h"

namespace config {

UpstreamConfig resolveUpstream(const Settings& settings, const Environment& env, std::vector<std::string>& warnings);

}  // namespace config
