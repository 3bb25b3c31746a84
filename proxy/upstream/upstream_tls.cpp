#include "proxy/upstream/upstream_tls.h"

#include <arpa/inet.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace proxy::upstream {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

std::vector<X509Ptr> readCertificates(const std::string& pem, const char* what) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::vector<X509Ptr> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) certs.emplace_back(cert);
  ERR_clear_error();  // the loop ends on the expected "no start line" error
  if (certs.empty()) throw std::invalid_argument(std::string("no PEM certificate in ") + what);
  return certs;
}

std::unique_ptr<EVP_PKEY, PkeyFree> readPrivateKey(const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::unique_ptr<EVP_PKEY, PkeyFree> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) throw std::invalid_argument("no PEM private key in the client key");
  return key;
}

void configureTrust(SSL_CTX* ctx, const UpstreamOptions& upstream) {
  if (upstream.insecure_skip_tls_verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return;
  }
  if (!upstream.ca_pem.empty()) {
    auto certs = readCertificates(upstream.ca_pem, "the CA bundle");  // may throw: before allocating
    X509_STORE* store = X509_STORE_new();
    for (auto& cert : certs) X509_STORE_add_cert(store, cert.get());
    SSL_CTX_set_cert_store(ctx, store);  // the context owns the store from here
  } else {
    SSL_CTX_set_default_verify_paths(ctx);
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const std::string& name = upstreamServerName(upstream);
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  const int ok = isIpLiteral(name) ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                                   : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
  if (ok != 1) throw std::invalid_argument("cannot verify the upstream as " + name);
}

void configureClientCertificate(SSL_CTX* ctx, const UpstreamOptions& upstream) {
  if (upstream.client_cert_pem.empty() && upstream.client_key_pem.empty()) return;
  auto chain = readCertificates(upstream.client_cert_pem, "the client certificate");
  auto key = readPrivateKey(upstream.client_key_pem);
  // The context takes its own references to the leaf, the chain and the key.
  if (SSL_CTX_use_certificate(ctx, chain.front().get()) != 1 || SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    throw std::invalid_argument("the client certificate does not match its key");
  }
  for (size_t i = 1; i < chain.size(); ++i) SSL_CTX_add1_chain_cert(ctx, chain[i].get());
}

}  // namespace

bool isIpLiteral(const std::string& host) {
  unsigned char address[16];
  return inet_pton(AF_INET, host.c_str(), address) == 1 || inet_pton(AF_INET6, host.c_str(), address) == 1;
}

const std::string& upstreamServerName(const UpstreamOptions& upstream) {
  return upstream.tls_server_name.empty() ? upstream.host : upstream.tls_server_name;
}

void configureUpstreamTls(SSL_CTX* ctx, const UpstreamOptions& upstream) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  configureTrust(ctx, upstream);
  configureClientCertificate(ctx, upstream);
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx, kAlpn, sizeof(kAlpn));
}

}  // namespace proxy::upstream
