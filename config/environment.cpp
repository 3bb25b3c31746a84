#include "config/environment.h"

#include <cstdlib>

namespace config {

namespace {

std::optional<std::string> variable(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace

Environment Environment::fromProcess() {
  Environment env;
  env.kubeconfig = variable("KUBECONFIG");
  env.home = variable("HOME");
  env.kubernetes_service_host = variable("KUBERNETES_SERVICE_HOST");
  env.kubernetes_service_port = variable("KUBERNETES_SERVICE_PORT");
  return env;
}

}  // namespace config
