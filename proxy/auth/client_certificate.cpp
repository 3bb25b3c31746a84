#include "proxy/auth/client_certificate.h"

#include <algorithm>
#include <memory>

#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

namespace proxy::auth {

std::optional<CertificateIdentity> certificateIdentity(SSL* ssl, const std::vector<std::string>& refused_groups) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return std::nullopt;
  std::unique_ptr<X509, decltype(&X509_free)> owned(cert, X509_free);
  if (SSL_get_verify_result(ssl) != X509_V_OK) return std::nullopt;
  X509_NAME* subject = X509_get_subject_name(cert);
  auto text = [subject](int index) {
    unsigned char* utf8 = nullptr;
    const int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index)));
    if (n < 0) return std::string();
    std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
    return out;
  };
  UserInfo user;
  // Go's pkix.Name keeps the last CommonName of the subject, and the apiserver's x509
  // authenticator names the user by it.
  int cn = -1;
  for (int i = -1; (i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) >= 0;) cn = i;
  if (cn >= 0) user.name = text(cn);
  if (user.name.empty()) return std::nullopt;
  for (int o = -1; (o = X509_NAME_get_index_by_NID(subject, NID_organizationName, o)) >= 0;) user.groups.push_back(text(o));
  // The name and groups become Impersonate-* header values upstream: a control character
  // (a CR LF would add a header the CA never granted, e.g. Impersonate-Group:
  // system:masters) refuses the certificate, so the request is unauthenticated (401).
  const auto has_control = [](const std::string& v) {
    return std::any_of(v.begin(), v.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
  };
  if (has_control(user.name) || std::any_of(user.groups.begin(), user.groups.end(), has_control)) {
    spdlog::warn("refused a client certificate whose subject holds control characters");
    return std::nullopt;
  }
  // The proxy impersonates a certificate's groups with its own right to impersonate any
  // group: privileged ones (system:masters by default) only when the operator allows them.
  for (const std::string& group : user.groups) {
    if (std::find(refused_groups.begin(), refused_groups.end(), group) != refused_groups.end()) {
      spdlog::warn("refused the client certificate of {}: group {} is refused (--refuse-client-cert-groups)",
                   user.name, group);
      return std::nullopt;
    }
  }
  user.groups.emplace_back("system:authenticated");
  CertificateIdentity identity{std::move(user), 0};
  std::tm until{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &until) == 1) identity.not_after = timegm(&until);
  return identity;
}

bool certificateStillVerifies(SSL* ssl, SSL_CTX* current) {
  X509* leaf = SSL_get0_peer_certificate(ssl);
  X509_STORE* roots = current ? SSL_CTX_get_cert_store(current) : nullptr;
  if (!leaf || !roots) return false;
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> verify(X509_STORE_CTX_new(), X509_STORE_CTX_free);
  // The chain the client sent (its intermediates); the leaf is verified at the current time.
  if (!verify || X509_STORE_CTX_init(verify.get(), roots, leaf, SSL_get_peer_cert_chain(ssl)) != 1) return false;
  X509_STORE_CTX_set_purpose(verify.get(), X509_PURPOSE_SSL_CLIENT);
  return X509_verify_cert(verify.get()) == 1;
}

}  // namespace proxy::auth
