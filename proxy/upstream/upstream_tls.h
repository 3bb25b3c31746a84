#pragma once
// The one place that decides how a TLS connection to the apiserver is set up, for both
// upstream clients: the pass-through's connection pool (Beast, proxy/upstream/upstream_pool.cpp)
// and the reflectors' and discovery's clients (cpp-httplib, upstream_connector.cpp).
// Each hands its OpenSSL context here:
// - TLS 1.2 or later (the apiserver accepts nothing older);
// - trust: exactly `ca_pem` when set, else the system roots; none with
//   insecure_skip_tls_verify. httplib's own verification is not used because handing it
//   a CA store also trusts every system root (measured on 0.11.4);
// - the peer must match `tls_server_name`, or the host: a DNS name or an IP literal,
//   checked by OpenSSL during the handshake;
// - the client certificate chain and its key, checked to match;
// - ALPN offers only http/1.1, so a Go apiserver never selects h2 on these connections.
// Throws std::invalid_argument for unusable material, before the first connection.

#include <string>

#include "proxy/upstream/upstream_options.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace proxy::upstream {

void configureUpstreamTls(SSL_CTX* ctx, const UpstreamOptions& upstream);

// The name the upstream's certificate must carry (and the SNI, unless it is an IP).
const std::string& upstreamServerName(const UpstreamOptions& upstream);

bool isIpLiteral(const std::string& host);

}  // namespace proxy::upstream
