#include "proxy/upstream/http_discovery.h"

#include <algorithm>
#include <utility>

#include <httplib.h>

#include "proxy/upstream/discovery_documents.h"

namespace proxy::upstream {
namespace {

// What kubectl sends (toolchain notes §6), minus v2beta1, which 1.30+ no longer needs.
constexpr const char* kAggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
constexpr const char* kJson = "application/json";

bool isAggregated(const std::string& content_type) {
  return content_type.find("as=APIGroupDiscoveryList") != std::string::npos;
}

// One line an operator can act on: what failed, and what to check.
std::string describe(const std::string& url, const std::string& path, int status, const std::string& transport_error) {
  const std::string what = "GET " + url + path + ": ";
  if (status == 0) {
    return what + "no answer (" + transport_error +
           "): check that the apiserver runs at this address (--upstream, or the kubeconfig's server) and that "
           "this host can reach it";
  }
  if (status == 401) return what + "HTTP 401: the apiserver does not accept the proxy's credentials (kubeconfig user, --token, --token-file)";
  if (status == 403) return what + "HTTP 403: the proxy's identity may not read discovery (grant it the system:discovery role)";
  return what + "HTTP " + std::to_string(status);
}

// Built-in API groups: the core group, the historical dot-less groups (apps, batch, ...)
// and the *.k8s.io groups. Only used when the CRD list cannot be read.
bool looksBuiltin(const std::string& group) {
  constexpr std::string_view kSuffix = ".k8s.io";
  return group.empty() || group.find('.') == std::string::npos ||
         (group.size() > kSuffix.size() && group.compare(group.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0);
}

}  // namespace

HttpDiscovery::HttpDiscovery(std::shared_ptr<UpstreamConnector> connector, HttpDiscoveryOptions options)
    : connector_(std::move(connector)), options_(std::move(options)) {}

HttpDiscovery::Response HttpDiscovery::get(const std::string& path, const std::string& accept,
                                           std::stop_token stop) {
  if (stop.stop_requested()) return {0, "", "", "stopped"};
  auto client = connector_->makeClient();
  // Shutting the socket down ends a request blocked on a slow upstream.
  std::stop_callback interrupt(stop, [&client] { client->stop(); });
  client->set_read_timeout(options_.read_timeout);
  httplib::Headers headers{{"Accept", accept}, {"User-Agent", options_.user_agent}};
  if (auto auth = connector_->authorization(); !auth.empty()) headers.emplace("Authorization", std::move(auth));
  auto result = client->Get(connector_->upstream().path_prefix + path, headers);
  if (!result) return {0, "", "", httplib::to_string(result.error())};
  return {result->status, std::move(result->body), result->get_header_value("Content-Type"), ""};
}

std::string HttpDiscovery::baseUrl() const {
  const UpstreamOptions& u = connector_->upstream();
  return u.scheme + "://" + u.host + ":" + std::to_string(u.port) + u.path_prefix;
}

watch::DiscoveryResult HttpDiscovery::discover(std::stop_token stop) {
  watch::DiscoveryResult out;
  for (const char* root : {"/api", "/apis"}) {
    Response response = get(root, kAggregatedAccept, stop);
    if (response.status != 200) {
      out.error = describe(baseUrl(), root, response.status, response.transport_error);
      return out;
    }
    if (isAggregated(response.content_type)) {
      auto resources = parseAggregatedDiscovery(response.body);
      if (!resources) {
        out.error = std::string("GET ") + root + ": unreadable APIGroupDiscoveryList";
        return out;
      }
      out.resources.insert(out.resources.end(), resources->begin(), resources->end());
      continue;
    }
    // Legacy discovery: the root lists group versions, each read on its own.
    const bool core = std::string_view(root) == "/api";
    auto group_versions = core ? parseCoreVersions(response.body) : parseGroupVersions(response.body);
    if (!group_versions) {
      out.error = std::string("GET ") + root + ": unreadable discovery document";
      return out;
    }
    for (const std::string& gv : *group_versions) {
      const std::string path = std::string(root) + "/" + gv;
      Response list = get(path, kJson, stop);
      if (list.status != 200) {
        out.error = describe(baseUrl(), path, list.status, list.transport_error);
        return out;
      }
      const size_t slash = gv.find('/');
      const std::string group = core || slash == std::string::npos ? "" : gv.substr(0, slash);
      const std::string version = core || slash == std::string::npos ? gv : gv.substr(slash + 1);
      auto resources = parseResourceList(list.body, group, version);
      if (!resources) {
        out.error = "GET " + path + ": unreadable APIResourceList";
        return out;
      }
      out.resources.insert(out.resources.end(), resources->begin(), resources->end());
    }
  }

  std::optional<std::set<std::string>> aggregated;
  if (Response services = get("/apis/apiregistration.k8s.io/v1/apiservices", kJson, stop); services.status == 200) {
    aggregated = parseAggregatedGroupVersions(services.body);
  }
  if (aggregated && !aggregated->empty()) {
    std::erase_if(out.resources,
                  [&](const watch::ApiResource& r) { return aggregated->count(r.apiVersion()) > 0; });
  }

  std::optional<std::set<std::string>> custom;
  if (Response crds = get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", kJson, stop); crds.status == 200) {
    custom = parseCustomResourceKeys(crds.body);
  }
  for (watch::ApiResource& resource : out.resources) {
    resource.custom = custom ? custom->count(groupResourceKey(resource.group, resource.resource)) > 0
                             : !looksBuiltin(resource.group);
  }
  return out;
}

std::optional<watch::CustomResourceFields> HttpDiscovery::customResourceFields(const watch::ApiResource& resource,
                                                                               std::stop_token stop) {
  Response response = get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + resource.resource + "." +
                              resource.group,
                          kJson, stop);
  if (response.status != 200) return std::nullopt;
  auto facts = parseCustomResourceDefinition(response.body, resource.version);
  if (!facts) return std::nullopt;
  return watch::CustomResourceFields{std::move(facts->list_kind), std::move(facts->json_paths)};
}

}  // namespace proxy::upstream
