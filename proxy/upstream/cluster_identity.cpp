#include "proxy/upstream/cluster_identity.h"

#include <httplib.h>
#include <rapidjson/document.h>

namespace proxy::upstream {

std::string serverUrl(const UpstreamOptions& upstream) {
  const bool ipv6 = upstream.host.find(':') != std::string::npos;
  return upstream.scheme + "://" + (ipv6 ? "[" + upstream.host + "]" : upstream.host) + ":" +
         std::to_string(upstream.port) + upstream.path_prefix;
}

std::string namespaceUid(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return "";
  const auto metadata = doc.FindMember("metadata");
  if (metadata == doc.MemberEnd() || !metadata->value.IsObject()) return "";
  const auto uid = metadata->value.FindMember("uid");
  if (uid == metadata->value.MemberEnd() || !uid->value.IsString()) return "";
  return std::string(uid->value.GetString(), uid->value.GetStringLength());
}

ClusterIdentity readClusterIdentity(UpstreamConnector& connector, std::chrono::milliseconds timeout) {
  ClusterIdentity out;
  out.upstream.server = serverUrl(connector.upstream());
  auto client = connector.makeClient();
  client->set_read_timeout(timeout);
  httplib::Headers headers{{"Accept", "application/json"}, {"User-Agent", "kube-cache-proxy"}};
  if (auto auth = connector.authorization(); !auth.empty()) headers.emplace("Authorization", std::move(auth));
  const std::string path = connector.upstream().path_prefix + "/api/v1/namespaces/kube-system";
  auto result = client->Get(path, headers);
  if (!result) {
    out.error = "GET " + path + ": no answer (" + httplib::to_string(result.error()) + ")";
  } else if (result->status != 200) {
    out.error = "GET " + path + ": HTTP " + std::to_string(result->status) +
                (result->status == 403 ? " (grant the proxy get on namespaces/kube-system)" : "");
  } else {
    out.upstream.cluster_uid = namespaceUid(result->body);
    if (out.upstream.cluster_uid.empty()) out.error = "GET " + path + ": no metadata.uid";
  }
  return out;
}

}  // namespace proxy::upstream
