#pragma once
// The parts of the process environment that configuration depends on, gathered
// in one struct so tests can inject them instead of mutating the real one.

#include <filesystem>
#include <optional>
#include <string>

namespace config {

struct Environment {
  std::optional<std::string> kubeconfig;  // $KUBECONFIG, possibly a ':'-list
  std::optional<std::string> home;        // $HOME, for ~/.kube/config
  std::optional<std::string> kubernetes_service_host;  // $KUBERNETES_SERVICE_HOST
  std::optional<std::string> kubernetes_service_port;  // $KUBERNETES_SERVICE_PORT
  // Where the kubelet mounts the pod's token and CA.
  std::filesystem::path service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  // The real environment of this process.
  static Environment fromProcess();
};

}  // namespace config
