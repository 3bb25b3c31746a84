#pragma once
// UpstreamFailure: why the upstream apiserver could not be reached. Plain code (no Asio).

#include <stdexcept>
#include <string>
#include <utility>

#include "proxy/api_status.h"

namespace proxy::io {

// `kind` labels kube_cache_proxy_upstream_errors_total.
struct UpstreamFailure : std::runtime_error {
  UpstreamFailure(Reason r, std::string k, const std::string& message)
      : std::runtime_error(message), reason(r), kind(std::move(k)) {}
  Reason reason;
  std::string kind;  // connect, timeout, tls, io
};

}  // namespace proxy::io
