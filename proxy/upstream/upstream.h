#pragma once
// Upstream: the upstream apiserver as every io thread sees it (address, TLS context,
// credentials, the breaker it reports to). Thread-safe.

#include <memory>
#include <string>
#include <utility>

#include "proxy/asio_beast.h"
#include "proxy/upstream/bearer_token_source.h"
#include "proxy/upstream/upstream_features.h"
#include "proxy/upstream/upstream_options.h"

namespace watch {
class UpstreamHealth;
}

namespace proxy {
class ProxyMetrics;
}

namespace proxy::io {

class Upstream {
 public:
  Upstream(const UpstreamOptions& options, ProxyMetrics& metrics);
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  const UpstreamOptions& options() const { return options_; }
  // "https://10.0.0.1:6443", as used in error messages.
  const std::string& url() const { return url_; }
  const std::string& hostHeader() const { return host_header_; }
  asio::ssl::context* tls() { return tls_.get(); }
  std::string bearerToken() { return tokens_.token(); }
  ProxyMetrics& metrics() { return metrics_; }
  // "error trying to reach upstream <url>: <detail>"
  std::string reachError(const std::string& detail) const;
  // The breaker every connection to the upstream reports to; null when not set (tests).
  // Set before the server starts.
  void setHealth(std::shared_ptr<watch::UpstreamHealth> health) { health_ = std::move(health); }
  watch::UpstreamHealth* health() const { return health_.get(); }
  // Feature gates learned from the upstream's answers.
  UpstreamFeatures& features() { return features_; }

 private:
  const UpstreamOptions options_;
  ProxyMetrics& metrics_;
  std::string url_;
  std::string host_header_;
  std::unique_ptr<asio::ssl::context> tls_;  // null for scheme http
  BearerTokenSource tokens_;
  std::shared_ptr<watch::UpstreamHealth> health_;
  UpstreamFeatures features_;
};

}  // namespace proxy::io
