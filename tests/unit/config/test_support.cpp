#include "test_support.h"

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <fstream>
#include <memory>
#include <stdexcept>

namespace config::test {

namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

void require(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what);
}

PkeyPtr newKey() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  require(key != nullptr, "EVP_EC_gen");
  return key;
}

X509Ptr newCertificate(const char* common_name, EVP_PKEY* subject_key, X509* issuer, EVP_PKEY* issuer_key,
                       long serial) {
  X509Ptr cert(X509_new());
  require(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24L * 3600);
  X509_set_pubkey(cert.get(), subject_key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  require(X509_sign(cert.get(), issuer_key, EVP_sha256()) > 0, "X509_sign");
  return cert;
}

std::string bioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

std::string certificatePem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  require(PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
  return bioText(bio.get());
}

std::string keyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  require(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
          "PEM_write_bio_PrivateKey");
  return bioText(bio.get());
}

TestPki generatePki() {
  PkeyPtr ca_key = newKey();
  X509Ptr ca = newCertificate("test-ca", ca_key.get(), nullptr, ca_key.get(), 1);
  PkeyPtr client_key = newKey();
  X509Ptr client = newCertificate("test-admin", client_key.get(), ca.get(), ca_key.get(), 2);
  PkeyPtr other_key = newKey();
  return TestPki{certificatePem(ca.get()), certificatePem(client.get()), keyPem(client_key.get()),
                 keyPem(other_key.get())};
}

}  // namespace

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kcp-config-test-XXXXXX").string();
  require(mkdtemp(pattern.data()) != nullptr, "mkdtemp");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path TempDir::write(const std::filesystem::path& relative, const std::string& contents) const {
  const std::filesystem::path full = path_ / relative;
  std::filesystem::create_directories(full.parent_path());
  std::ofstream out(full, std::ios::binary | std::ios::trunc);
  out << contents;
  require(static_cast<bool>(out), "write");
  return full;
}

const TestPki& testPki() {
  static const TestPki pki = generatePki();
  return pki;
}

std::string encodeBase64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(written));
  return out;
}

Environment emptyEnvironment(const TempDir& scratch) {
  Environment env;
  env.service_account_dir = scratch.path() / "serviceaccount";
  return env;
}

Config loadArgs(const std::vector<std::string>& args, const Environment& env) {
  std::vector<const char*> argv{"kube-cache-proxy"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return load(static_cast<int>(argv.size()), argv.data(), env);
}

std::string loadError(const std::vector<std::string>& args, const Environment& env) {
  try {
    loadArgs(args, env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace config::test
