#include "proxy/upstream/upstream_connector.h"

#include <netdb.h>
#include <sys/socket.h>

#include <csignal>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <httplib.h>
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

bool isIpLiteral(const std::string& host) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* result = nullptr;
  const bool numeric = getaddrinfo(host.c_str(), nullptr, &hints, &result) == 0;
  if (result) freeaddrinfo(result);
  return numeric;
}

// The first address `host` resolves to, as text; "" when it does not resolve (the
// connect then fails and is reported as a transport error).
std::string resolveAddress(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &result) != 0 || !result) return "";
  char text[NI_MAXHOST] = {};
  const int rc = getnameinfo(result->ai_addr, result->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST);
  freeaddrinfo(result);
  return rc == 0 ? text : "";
}

// Trust and peer-name checks on the OpenSSL context, so that exactly the configured CA is
// trusted (see the header for why httplib's verification is not used).
void configureVerification(SSL_CTX* ctx, const UpstreamOptions& upstream) {
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
  const std::string& name = upstream.tls_server_name.empty() ? upstream.host : upstream.tls_server_name;
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  const int ok = isIpLiteral(name) ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                                   : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
  if (ok != 1) throw std::invalid_argument("cannot verify the upstream as " + name);
}

std::unique_ptr<httplib::ClientImpl> makeTlsClient(const std::string& host, uint16_t port,
                                                   const UpstreamOptions& upstream) {
  std::unique_ptr<httplib::SSLClient> client;
  if (!upstream.client_cert_pem.empty() || !upstream.client_key_pem.empty()) {
    auto chain = readCertificates(upstream.client_cert_pem, "the client certificate");
    auto key = readPrivateKey(upstream.client_key_pem);
    // The client context takes its own references to the leaf and the key.
    client = std::make_unique<httplib::SSLClient>(host, port, chain.front().get(), key.get());
    if (!client->is_valid()) throw std::invalid_argument("the client certificate does not match its key");
    for (size_t i = 1; i < chain.size(); ++i) SSL_CTX_add1_chain_cert(client->ssl_context(), chain[i].get());
  } else {
    client = std::make_unique<httplib::SSLClient>(host, port);
  }
  if (!client->is_valid()) throw std::invalid_argument("cannot create a TLS client context");
  client->enable_server_certificate_verification(false);
  configureVerification(client->ssl_context(), upstream);
  return client;
}

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}


}  // namespace

UpstreamConnector::UpstreamConnector(UpstreamOptions upstream)
    : upstream_(std::move(upstream)), token_(upstream_.bearer_token) {
  std::signal(SIGPIPE, SIG_IGN);
  if (upstream_.scheme != "http" && upstream_.scheme != "https") {
    throw std::invalid_argument("upstream scheme must be http or https, not " + upstream_.scheme);
  }
  client_host_ = upstream_.host;
  if (upstream_.scheme == "https" && !upstream_.tls_server_name.empty() &&
      upstream_.tls_server_name != upstream_.host) {
    client_host_ = upstream_.tls_server_name;
  }
  makeClient();  // validates the TLS material up front
}

std::unique_ptr<httplib::ClientImpl> UpstreamConnector::makeClient() const {
  std::unique_ptr<httplib::ClientImpl> client =
      upstream_.scheme == "http" ? std::make_unique<httplib::ClientImpl>(upstream_.host, upstream_.port)
                                 : makeTlsClient(client_host_, upstream_.port, upstream_);
  if (client_host_ != upstream_.host) {
    // Connect to the configured host while presenting and verifying tls_server_name.
    // httplib wants a numeric address here, so resolve on every new client.
    client->set_hostname_addr_map({{client_host_, resolveAddress(upstream_.host, upstream_.port)}});
  }
  client->set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(upstream_.connect_timeout));
  client->set_url_encode(false);  // targets are already percent-encoded
  client->set_tcp_nodelay(true);
  return client;
}

std::string UpstreamConnector::authorization() {
  std::lock_guard lock(token_mu_);
  if (!upstream_.bearer_token_file.empty()) {
    std::error_code ec;
    const auto mtime = std::filesystem::last_write_time(upstream_.bearer_token_file, ec);
    if (!ec && (mtime != token_mtime_ || token_.empty())) {
      std::ifstream file(upstream_.bearer_token_file);
      std::stringstream content;
      content << file.rdbuf();
      // Keep the previous token if the file is caught mid-rotation (empty).
      if (std::string token = trimmed(content.str()); file && !token.empty()) {
        token_ = std::move(token);
        token_mtime_ = mtime;
      }
    }
  }
  return token_.empty() ? "" : "Bearer " + token_;
}

bool UpstreamConnector::probe() {
  std::unique_ptr<httplib::ClientImpl> client = makeClient();
  client->set_read_timeout(std::chrono::seconds(2));
  httplib::Headers headers{{"User-Agent", "kube-cache-proxy"}};
  if (auto auth = authorization(); !auth.empty()) headers.emplace("Authorization", std::move(auth));
  return static_cast<bool>(client->Get(upstream_.path_prefix + "/healthz", headers));
}

}  // namespace proxy::upstream
