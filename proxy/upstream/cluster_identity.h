#pragma once
// The upstream's identity, which saved state records (cache/state/state_file.h, issue 36, finding
// 2): the URL the proxy reaches it at, and the UID of its kube-system namespace. That
// namespace exists in every cluster from its first start and is never deleted, so its UID
// names the cluster for its life (the identity kubeadm and many operators use for a
// cluster ID); another cluster, even one behind the same address, has another.
//
// Read once at start with the proxy's credentials (`get` on namespaces/kube-system).

#include <chrono>
#include <string>

#include "cache/state/state_file.h"
#include "proxy/upstream/upstream_connector.h"

namespace proxy::upstream {

// "https://host:port/prefix", as the proxy reaches the upstream (IPv6 in brackets).
std::string serverUrl(const UpstreamOptions& upstream);

struct ClusterIdentity {
  cache::StateUpstream upstream;  // cluster_uid "" when it could not be read
  std::string error;              // why not, for the log
};

// GETs /api/v1/namespaces/kube-system once, waiting at most `timeout` for the answer.
ClusterIdentity readClusterIdentity(UpstreamConnector& connector, std::chrono::milliseconds timeout);

// The namespace's metadata.uid from its JSON, or "" when it has none.
std::string namespaceUid(const std::string& json);

}  // namespace proxy::upstream
