#include "config/in_cluster.h"

#include <stdexcept>

#include "config/files.h"
#include "config/pem.h"
#include "config/server_url.h"

namespace config {

std::optional<UpstreamConfig> inClusterUpstream(const Environment& env, std::vector<std::string>& warnings) {
  const std::string host = env.kubernetes_service_host.value_or("");
  const std::string port = env.kubernetes_service_port.value_or("");
  if (host.empty() || port.empty()) return std::nullopt;

  UpstreamConfig out;
  out.source = UpstreamSource::InCluster;
  out.origin = "in-cluster service account " + env.service_account_dir.string();
  out.scheme = "https";
  out.host = host;
  try {
    out.port = parsePort(port, false);
  } catch (const std::invalid_argument& e) {
    throw ConfigError("in-cluster: KUBERNETES_SERVICE_PORT \"" + port + "\": " + e.what());
  }

  const std::filesystem::path token = env.service_account_dir / "token";
  if (readFile(token, "in-cluster service account token").empty()) {
    throw ConfigError("in-cluster service account token: " + token.string() + " is empty");
  }
  out.bearer_token_file = token.string();

  const std::filesystem::path ca = env.service_account_dir / "ca.crt";
  std::error_code ec;
  if (!std::filesystem::exists(ca, ec)) {
    warnings.push_back("in-cluster: " + ca.string() + " does not exist; verifying the apiserver against the system roots");
    return out;
  }
  out.ca_pem = readFile(ca, "in-cluster service account CA");
  try {
    checkCertificates(out.ca_pem);
  } catch (const std::invalid_argument& e) {
    throw ConfigError("in-cluster service account CA " + ca.string() + ": " + e.what());
  }
  return out;
}

}  // namespace config
