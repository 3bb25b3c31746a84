#include "config/upstream_resolver.h"

#include <filesystem>
#include <optional>
#include <stdexcept>

#include "config/in_cluster.h"
#include "config/kubeconfig.h"
#include "config/server_url.h"
#include "config/upstream_overrides.h"

namespace config {

namespace {

bool isFile(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// $KUBECONFIG is a ':'-separated list that kubectl merges, skipping missing
// files. The proxy does not merge: it takes the first file that exists, which
// is also the one whose entries win in kubectl's merge.
std::optional<std::filesystem::path> firstExistingEntry(const std::string& list) {
  size_t start = 0;
  while (start <= list.size()) {
    const size_t colon = list.find(':', start);
    const std::string entry = list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!entry.empty() && isFile(entry)) return std::filesystem::path(entry);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> kubeconfigPath(const Settings& settings, const Environment& env) {
  if (settings.kubeconfig) return std::filesystem::path(settings.kubeconfig->value);
  if (env.kubeconfig && !env.kubeconfig->empty()) return firstExistingEntry(*env.kubeconfig);
  if (env.home && !env.home->empty()) {
    const std::filesystem::path path = std::filesystem::path(*env.home) / ".kube" / "config";
    if (isFile(path)) return path;
  }
  return std::nullopt;
}

UpstreamConfig fromUpstreamFlag(const Setting& upstream) {
  UpstreamConfig out;
  try {
    const ServerUrl url = parseServerUrl(upstream.value);
    out.scheme = url.scheme;
    out.host = url.host;
    out.port = url.port;
    out.path_prefix = url.path_prefix;
  } catch (const std::invalid_argument& e) {
    throw ConfigError(upstream.origin + " \"" + upstream.value + "\": " + e.what());
  }
  out.source = UpstreamSource::Flag;
  out.origin = upstream.origin;
  return out;
}

}  // namespace

UpstreamConfig resolveUpstream(const Settings& settings, const Environment& env, std::vector<std::string>& warnings) {
  UpstreamConfig out;
  if (settings.upstream) {
    out = fromUpstreamFlag(*settings.upstream);
    if (settings.context) {
      warnings.push_back(settings.context->origin + " is ignored: " + settings.upstream->origin +
                         " does not read a kubeconfig");
    }
  } else if (const std::optional<std::filesystem::path> path = kubeconfigPath(settings, env)) {
    out = readKubeconfig(*path, settings.context);
  } else if (settings.context) {
    throw ConfigError(settings.context->origin + " \"" + settings.context->value +
                      "\": no kubeconfig found ($KUBECONFIG and ~/.kube/config are absent)");
  } else if (std::optional<UpstreamConfig> in_cluster = inClusterUpstream(env, warnings)) {
    out = std::move(*in_cluster);
  } else {
    throw ConfigError(
        "no upstream apiserver: pass --upstream or --kubeconfig, or run in a pod "
        "(KUBERNETES_SERVICE_HOST is not set)");
  }

  applyUpstreamOverrides(settings, out, warnings);
  return out;
}

}  // namespace config
