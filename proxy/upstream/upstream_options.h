#pragma once
// How the proxy reaches and authenticates to its upstream kube-apiserver.
// Filled by cmd from config::Config (flags, config file, kubeconfig or in-cluster);
// proxy/ never reads configuration itself.

#include <chrono>
#include <cstdint>
#include <string>

namespace proxy {

struct UpstreamOptions {
  std::string scheme = "https";  // "http" or "https"
  std::string host;              // DNS name or IP literal (no brackets)
  uint16_t port = 443;
  std::string path_prefix;       // path of the server URL, e.g. "/k8s/clusters/c-1"; "" for none

  // TLS (scheme https). Empty PEMs mean "not configured".
  std::string ca_pem;                     // trust only these CAs; empty: the system roots
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;            // SNI and name to verify, instead of host
  std::string client_cert_pem;            // client certificate chain
  std::string client_key_pem;             // its private key

  // Credentials. A token file wins over a static token and is re-read when it
  // changes, because projected service-account tokens rotate on disk.
  std::string bearer_token;
  std::string bearer_token_file;

  std::chrono::milliseconds connect_timeout{5000};
};

}  // namespace proxy
