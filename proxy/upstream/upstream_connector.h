#pragma once
// UpstreamConnector: everything the cpp-httplib clients of the upstream share: the
// client (plain or TLS with the configured trust, client certificate and server name)
// and the Authorization header. HttpListerWatcher and HttpDiscovery both build their
// clients here.
//
// - TLS is set up by upstream_tls.h and the token read by BearerTokenSource, as for the
//   pass-through's connections: one behaviour for every connection to the apiserver.
// - Because the clients write to sockets without MSG_NOSIGNAL, constructing a connector
//   sets SIGPIPE to ignored for the whole process (as httplib::Server does).
//
// Thread-safe. Construction throws std::invalid_argument for unusable TLS material.

#include <memory>
#include <string>

#include "proxy/upstream/bearer_token_source.h"
#include "proxy/upstream/upstream_options.h"
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

  BearerTokenSource tokens_;
};

}  // namespace proxy::upstream
