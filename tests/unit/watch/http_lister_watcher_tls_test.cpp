// HttpListerWatcher over TLS: trust, peer names and client certificates.

#include <doctest/doctest.h>

#include <mutex>
#include <thread>

#include <httplib.h>
#include <openssl/pem.h>

#include "proxy/upstream/http_lister_watcher.h"
#include "test_certificates.h"

using proxy::upstream::HttpListerWatcher;
using watch::testing::makeTestPki;
using watch::testing::TestPki;

namespace {

X509* parseCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

EVP_PKEY* parseKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return key;
}

// An mTLS server on loopback that requires a client certificate from the test CA and
// reports the client's common name.
struct TlsApiserver {
  explicit TlsApiserver(const TestPki& pki) : server(makeServer(pki)) {
    server->Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu);
      authorization = req.get_header_value("Authorization");
      X509* peer = SSL_get_peer_certificate(req.ssl);
      if (peer) {
        char cn[256] = {};
        X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
        client_name = cn;
        X509_free(peer);
      }
      res.set_content(R"({"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[]})", "application/json");
    });
    port = server->bind_to_any_port("127.0.0.1");
    REQUIRE(port > 0);
    thread = std::thread([this] { server->listen_after_bind(); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!server->is_running() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    REQUIRE(server->is_running());
  }
  ~TlsApiserver() {
    server->stop();
    thread.join();
  }

  static std::unique_ptr<httplib::SSLServer> makeServer(const TestPki& pki) {
    X509* cert = parseCert(pki.server.cert_pem);
    EVP_PKEY* key = parseKey(pki.server.key_pem);
    X509_STORE* client_cas = X509_STORE_new();
    X509* ca = parseCert(pki.ca.cert_pem);
    X509_STORE_add_cert(client_cas, ca);
    X509_free(ca);
    auto server = std::make_unique<httplib::SSLServer>(cert, key, client_cas);
    X509_free(cert);
    EVP_PKEY_free(key);
    REQUIRE(server->is_valid());
    return server;
  }

  proxy::UpstreamOptions upstream(const TestPki& pki) const {
    proxy::UpstreamOptions options;
    options.scheme = "https";
    options.host = "127.0.0.1";
    options.port = static_cast<uint16_t>(port);
    options.ca_pem = pki.ca.cert_pem;
    options.client_cert_pem = pki.client.cert_pem;
    options.client_key_pem = pki.client.key_pem;
    options.bearer_token = "sa-token";
    return options;
  }

  std::unique_ptr<httplib::SSLServer> server;
  int port = 0;
  std::thread thread;
  std::mutex mu;
  std::string client_name;
  std::string authorization;
};

}  // namespace

TEST_CASE("TLS: the configured CA, client certificate and token reach the apiserver") {
  const TestPki pki = makeTestPki();
  TlsApiserver apiserver(pki);
  HttpListerWatcher lw(apiserver.upstream(pki), "/api/v1/pods");
  auto response = lw.list({}, {});
  CHECK(response.transport_error.empty());
  CHECK(response.status == 200);
  std::lock_guard lock(apiserver.mu);
  CHECK(apiserver.client_name == "kube-cache-proxy");
  CHECK(apiserver.authorization == "Bearer sa-token");
}

TEST_CASE("TLS: tls_server_name is what the server certificate is checked against") {
  const TestPki pki = makeTestPki();
  TlsApiserver apiserver(pki);
  auto options = apiserver.upstream(pki);
  options.tls_server_name = "kubernetes.default.svc";
  CHECK(HttpListerWatcher(options, "/api/v1/pods").list({}, {}).status == 200);

  options.tls_server_name = "other.example";
  auto refused = HttpListerWatcher(options, "/api/v1/pods").list({}, {});
  CHECK(refused.status == 0);
  CHECK_FALSE(refused.transport_error.empty());
}

TEST_CASE("TLS: a server signed by another CA is refused unless verification is off") {
  const TestPki pki = makeTestPki();
  const TestPki other = makeTestPki();
  TlsApiserver apiserver(pki);
  auto options = apiserver.upstream(pki);
  options.ca_pem = other.ca.cert_pem;
  auto refused = HttpListerWatcher(options, "/api/v1/pods").list({}, {});
  CHECK(refused.status == 0);

  options.insecure_skip_tls_verify = true;
  CHECK(HttpListerWatcher(options, "/api/v1/pods").list({}, {}).status == 200);
}

TEST_CASE("TLS: unusable credentials are rejected when the lister-watcher is built") {
  const TestPki pki = makeTestPki();
  proxy::UpstreamOptions options;
  options.host = "127.0.0.1";
  options.ca_pem = "not a certificate";
  CHECK_THROWS_AS(HttpListerWatcher(options, "/api/v1/pods"), std::invalid_argument);
  options.ca_pem = pki.ca.cert_pem;
  options.client_cert_pem = pki.client.cert_pem;
  options.client_key_pem = pki.server.key_pem;  // not the certificate's key
  CHECK_THROWS_AS(HttpListerWatcher(options, "/api/v1/pods"), std::invalid_argument);
}
