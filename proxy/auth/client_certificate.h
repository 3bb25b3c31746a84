#pragma once
// Client certificates in gateway mode, as the apiserver's x509 authenticator reads them:
// who a verified certificate names (CN = user, each O = a group), and whether it still
// verifies for a later request on the same connection. The apiserver verifies the chain
// on every request against the client CA it holds then, so an expired certificate or one
// from a CA that was rotated out stops authenticating at once, not when the client
// reconnects. OpenSSL only; no Asio here.

#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <openssl/ssl.h>

#include "proxy/auth/user_info.h"

namespace proxy::auth {

struct CertificateIdentity {
  UserInfo user;
  std::time_t not_after = 0;  // the leaf's; checked again once passed
};

// The identity the peer certificate of a completed handshake names, or nullopt: no
// certificate, a failed verification, a subject with control characters (its names
// become Impersonate-* header values upstream), or a group in `refused_groups`.
std::optional<CertificateIdentity> certificateIdentity(SSL* ssl, const std::vector<std::string>& refused_groups);

// Whether the connection's peer chain verifies now against the client CA of `current`
// (the serving context in force, which may have been rebuilt since the handshake).
bool certificateStillVerifies(SSL* ssl, SSL_CTX* current);

}  // namespace proxy::auth
