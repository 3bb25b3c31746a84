#pragma once
// Throwaway PKI made at run time for TLS tests: a CA, a server certificate for
// 127.0.0.1 and kubernetes.default.svc, and a client certificate, all EC P-256, as PEM.

#include <memory>
#include <stdexcept>
#include <string>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace watch::testing {

struct CertifiedKey {
  std::string cert_pem;
  std::string key_pem;
};

struct TestPki {
  CertifiedKey ca;
  CertifiedKey server;
  CertifiedKey client;
};

namespace detail {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* x) const { X509_free(x); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

inline Key newKey() {
  Key key(EVP_EC_gen("P-256"));
  if (!key) throw std::runtime_error("EVP_EC_gen failed");
  return key;
}

inline void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) throw std::runtime_error("bad extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// Issues a certificate for `key`; a null issuer makes it self-signed.
inline Cert issue(EVP_PKEY* key, const char* common_name, X509* issuer, EVP_PKEY* issuer_key, long serial,
                  const char* subject_alt_names, bool is_ca) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  addExtension(cert.get(), signer, NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "CA:FALSE");
  if (subject_alt_names) addExtension(cert.get(), signer, NID_subject_alt_name, subject_alt_names);
  if (X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()) == 0) {
    throw std::runtime_error("X509_sign failed");
  }
  return cert;
}

inline std::string certPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(bio);
  return pem;
}

inline std::string keyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(bio);
  return pem;
}

}  // namespace detail

inline TestPki makeTestPki() {
  using namespace detail;
  Key ca_key = newKey();
  Cert ca = issue(ca_key.get(), "test-ca", nullptr, nullptr, 1, nullptr, true);
  Key server_key = newKey();
  Cert server = issue(server_key.get(), "kube-apiserver", ca.get(), ca_key.get(), 2,
                      "DNS:kubernetes.default.svc,IP:127.0.0.1", false);
  Key client_key = newKey();
  Cert client = issue(client_key.get(), "kube-cache-proxy", ca.get(), ca_key.get(), 3, nullptr, false);
  return {{certPem(ca.get()), keyPem(ca_key.get())},
          {certPem(server.get()), keyPem(server_key.get())},
          {certPem(client.get()), keyPem(client_key.get())}};
}

}  // namespace watch::testing
