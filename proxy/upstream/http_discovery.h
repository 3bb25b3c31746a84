#pragma once
// HttpDiscovery: watch::Discovery over the upstream's HTTP API (contract N5).
//
// discover():
// 1. Aggregated discovery (apidiscovery.k8s.io/v2) on /api and /apis: two requests for
//    everything. An upstream that answers with the legacy documents instead gets the
//    legacy walk: /api, /api/v1, /apis, then /apis/<group>/<version> for each version.
// 2. Which resources are custom: the CRD list (apiextensions.k8s.io/v1). When it cannot
//    be read, a group is taken as built-in when it is the core group, has no dot, or ends
//    in ".k8s.io", and as custom otherwise.
// 3. Which group versions are aggregated APIs: APIServices with a service (apiregistration
//    .k8s.io/v1); their resources are left out. When that list cannot be read, none are
//    left out here (the manager still never caches what lacks list and watch verbs).
//
// customResourceFields() reads GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/<plural>.<group>.
//
// Thread-safe (each call uses its own client); calls block for at most the read timeout.

#include <chrono>
#include <memory>
#include <string>

#include "proxy/upstream/upstream_connector.h"
#include "watch/discovery.h"

namespace proxy::upstream {

struct HttpDiscoveryOptions {
  std::chrono::seconds read_timeout{30};
  std::string user_agent = "kube-cache-proxy";
};

class HttpDiscovery final : public watch::Discovery {
 public:
  explicit HttpDiscovery(std::shared_ptr<UpstreamConnector> connector, HttpDiscoveryOptions options = {});

  // watch::Discovery
  watch::DiscoveryResult discover(std::stop_token stop) override;
  std::optional<watch::CustomResourceFields> customResourceFields(const watch::ApiResource& resource,
                                                                  std::stop_token stop) override;

 private:
  struct Response {
    int status = 0;  // 0: no response (transport_error says why)
    std::string body;
    std::string content_type;
    std::string transport_error;
  };
  Response get(const std::string& path, const std::string& accept, std::stop_token stop);
  // "https://10.0.0.1:6443" and any path prefix, for messages.
  std::string baseUrl() const;

  std::shared_ptr<UpstreamConnector> connector_;
  HttpDiscoveryOptions options_;
};

}  // namespace proxy::upstream
