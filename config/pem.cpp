#include "config/pem.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <stdexcept>

namespace config {

namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct DecodeCtxFree {
  void operator()(EVP_ENCODE_CTX* ctx) const { EVP_ENCODE_CTX_free(ctx); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

BioPtr memoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

X509Ptr firstCertificate(const std::string& pem) {
  BioPtr bio = memoryBio(pem);
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

PkeyPtr privateKey(const std::string& pem) {
  BioPtr bio = memoryBio(pem);
  return PkeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace

std::string decodeBase64(std::string_view text) {
  std::string compact;
  compact.reserve(text.size());
  for (char c : text) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') compact.push_back(c);
  }
  std::unique_ptr<EVP_ENCODE_CTX, DecodeCtxFree> ctx(EVP_ENCODE_CTX_new());
  EVP_DecodeInit(ctx.get());
  std::string out(compact.size() / 4 * 3 + 3, '\0');
  int written = 0;
  int status = EVP_DecodeUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &written,
                                reinterpret_cast<const unsigned char*>(compact.data()),
                                static_cast<int>(compact.size()));
  int tail = 0;
  if (status < 0 ||
      EVP_DecodeFinal(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + written, &tail) < 0 ||
      (compact.size() % 4) != 0) {
    throw std::invalid_argument("invalid base64");
  }
  out.resize(static_cast<size_t>(written + tail));
  return out;
}

void checkCertificates(const std::string& pem) {
  ERR_clear_error();
  if (!firstCertificate(pem)) throw std::invalid_argument("no PEM certificate found");
}

void checkPrivateKey(const std::string& pem) {
  ERR_clear_error();
  if (!privateKey(pem)) throw std::invalid_argument("no PEM private key found");
}

void checkKeyMatchesCertificate(const std::string& cert_pem, const std::string& key_pem) {
  ERR_clear_error();
  X509Ptr cert = firstCertificate(cert_pem);
  PkeyPtr key = privateKey(key_pem);
  if (!cert || !key || X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    throw std::invalid_argument("private key does not match the client certificate");
  }
}

}  // namespace config
