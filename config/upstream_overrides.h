#pragma once
// kubectl's global credential flags (--certificate-authority,
// --client-certificate, --client-key, --token, --tls-server-name,
// --insecure-skip-tls-verify) plus --connect-timeout, applied on top of the
// upstream that resolveUpstream() picked. Each set flag replaces the matching
// kubeconfig, service-account or --upstream value, the way clientcmd merges
// its ConfigOverrides.

#include <string>
#include <vector>

#include "config/config.h"
#include "config/settings.h"

namespace config {

// Reads and checks every PEM the flags name. Throws ConfigError naming the
// flag (or config-file key) for an unreadable file, bad PEM, a key that does
// not match its certificate, a certificate without key, --token together
// with --token-file, or --insecure-skip-tls-verify with --certificate-authority.
// TLS flags given for a plain-http upstream still apply, and add a warning.
void applyUpstreamOverrides(const Settings& settings, UpstreamConfig& upstream, std::vector<std::string>& warnings);

}  // namespace config
