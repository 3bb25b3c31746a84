#pragma once
// UpstreamConnector: everything the cpp-httplib clients of the upstream share: the
// client (plain or TLS with the configured trust, client certificate and server name)
// and the Authorization header. HttpListerWatcher and HttpDiscovery both build their
// clients here, so there is one place that decides how we talk to the apiserver.
//
// - TLS trust is configured on the OpenSSL context directly: only `ca_pem` (or, when it is
//   empty, the system roots) is trusted, and the peer must match `tls_server_name` or the
//   host. httplib's own verification is bypassed because handing it a CA store also
//   trusts every system root (measured on 0.11.4).
// - The bearer token file, when set, is re-read whenever its modification time changes,
//   because projected service-account tokens rotate on disk.
// - Because the clients write to sockets without MSG_NOSIGNAL, constructing a connector
//   sets SIGPIPE to ignored for the whole process (as httplib::Server does).
//
// Thread-safe. Construction throws std::invalid_argument for unusable TLS material.

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "proxy/upstream_options.h"
#include "watch/upstream_health.h"

namespace httplib {
class ClientImpl;
}  // namespace httplib

namespace proxy::upstream {

class UpstreamConnector {
 public:
  explicit UpstreamConnector(UpstreamOptions upstream);
  UpstreamConnector(const UpstreamConnector&) = delete;
  UpstreamConnector& operator=(const UpstreamConnector&) = delete;

  // A new client for one connection at a time, with the connect timeout, no URL
  // re-encoding (targets arrive percent-encoded) and TCP_NODELAY set.
  std::unique_ptr<httplib::ClientImpl> makeClient() const;
  // The Authorization header value, or "" for none. Re-reads the token file if it changed.
  std::string authorization();

  const UpstreamOptions& upstream() const { return upstream_; }

  // The breaker the clients built here report to (answered / failed); null: none. Set
  // before any client is used.
  void setHealth(std::shared_ptr<watch::UpstreamHealth> health) { health_ = std::move(health); }
  watch::UpstreamHealth* health() const { return health_.get(); }
  // One `GET /healthz`: true when the upstream answered at all (any status). The
  // breaker's probe while the upstream is down.
  bool probe();

 private:
  UpstreamOptions upstream_;
  // The name the client connects to: tls_server_name when set (for SNI and verification),
  // mapped to the resolved address of the configured host.
  std::string client_host_;

  std::shared_ptr<watch::UpstreamHealth> health_;

  std::mutex token_mu_;
  std::string token_;                              // guarded by token_mu_
  std::filesystem::file_time_type token_mtime_{};  // guarded by token_mu_
};

}  // namespace proxy::upstream
