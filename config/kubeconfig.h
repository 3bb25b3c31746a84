#pragma once
// A reader for kubeconfig files (clientcmd's v1 Config), limited to what the
// proxy can honour: server URL, TLS trust, client certificates and bearer
// tokens. Anything that would change who the proxy authenticates as and that
// it cannot do (exec plugins, auth providers, basic auth, impersonation,
// proxy-url) is an error at start-up rather than silently ignored.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/settings.h"

namespace config {

// The upstream described by `context` (or the file's current-context) in the
// kubeconfig at `path`. Relative file references resolve against the
// kubeconfig's directory, as kubectl does. Throws ConfigError naming the file
// and the key at fault.
UpstreamConfig readKubeconfig(const std::filesystem::path& path, const std::optional<Setting>& context);

}  // namespace config
