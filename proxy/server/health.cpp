#include "proxy/server/health.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cache/query/query_values.h"
#include "proxy/query_params.h"
#include "watch/upstream_health.h"

namespace proxy {

bool isHealthPath(std::string_view path) { return path == "/healthz" || path == "/livez" || path == "/readyz"; }

std::pair<unsigned, std::string> readyz(const cache::QueryValues& query, const ReadinessInputs& inputs) {
  auto excluded = [&query](std::string_view name) {
    for (const auto& [key, value] : query.pairs()) {
      if (key == "exclude" && value == name) return true;
    }
    return false;
  };
  const watch::UpstreamHealth* health = inputs.upstream;
  const std::function<bool()>* ready = inputs.informers_synced;
  struct Check {
    const char* name;
    bool ok;
    std::string why;
  };
  const Check checks[] = {
      {"ping", true, ""},
      {"shutdown", !inputs.stopping, "the server is shutting down"},
      {"informer-sync", !ready || !*ready || (*ready)(), "configured resources have not synced yet"},
      // Cached reads keep being served while the upstream is down; a probe that should
      // keep the proxy in rotation then uses /readyz?exclude=upstream.
      {"upstream", !health || health->up(), health ? "unreachable: " + health->lastError() : ""},
  };
  std::string lines;
  bool ok = true;
  for (const Check& check : checks) {
    if (excluded(check.name)) {
      lines += fmt::format("[+]{} excluded: ok\n", check.name);
      continue;
    }
    ok = ok && check.ok;
    if (check.ok) {
      lines += fmt::format("[+]{} ok\n", check.name);
    } else {
      // As kube-apiserver: the reason goes to the log, not to whoever asks (/readyz needs
      // no credentials, and the upstream's error names addresses and certificates).
      lines += fmt::format("[-]{} failed: reason withheld\n", check.name);
      spdlog::debug("readyz check {} failed: {}", check.name, check.why);
    }
  }
  if (!ok) return {500, lines + "readyz check failed\n"};
  if (parseBoolParam(query.get("verbose"))) return {200, lines + "readyz check passed\n"};
  return {200, "ok"};
}

}  // namespace proxy
