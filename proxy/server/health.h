#pragma once
// The health endpoints the proxy answers itself, unauthenticated: /healthz and /livez
// (the process serves) and /readyz (it should get traffic), worded as kube-apiserver
// words them. Plain code (no Asio).

#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "cache/query/query_values.h"

namespace watch {
class UpstreamHealth;
}

namespace proxy {

// /healthz, /livez or /readyz.
bool isHealthPath(std::string_view path);

// What /readyz checks.
struct ReadinessInputs {
  bool stopping = false;
  const std::function<bool()>* informers_synced = nullptr;  // null or empty: no such check
  const watch::UpstreamHealth* upstream = nullptr;          // null: no breaker (tests)
};

// /readyz the way the apiserver words it: one "[+]name ok" / "[-]name failed" line per
// check (always on failure, on success with ?verbose), `exclude` skips checks. Returns
// the status code and the body.
std::pair<unsigned, std::string> readyz(const cache::QueryValues& query, const ReadinessInputs& inputs);

}  // namespace proxy
