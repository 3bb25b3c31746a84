#include "proxy/upstream/upstream_connector.h"

#include <netdb.h>
#include <sys/socket.h>

#include <csignal>
#include <stdexcept>
#include <utility>
#include <vector>

#include <httplib.h>

#include "proxy/upstream/upstream_tls.h"

namespace proxy::upstream {
namespace {

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

std::unique_ptr<httplib::ClientImpl> makeTlsClient(const std::string& host, uint16_t port,
                                                   const UpstreamOptions& upstream) {
  auto client = std::make_unique<httplib::SSLClient>(host, port);
  if (!client->is_valid()) throw std::invalid_argument("cannot create a TLS client context");
  client->enable_server_certificate_verification(false);  // OpenSSL verifies (upstream_tls.h)
  configureUpstreamTls(client->ssl_context(), upstream);
  return client;
}

}  // namespace

UpstreamConnector::UpstreamConnector(UpstreamOptions upstream)
    : upstream_(std::move(upstream)), tokens_(upstream_) {
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
  std::string token = tokens_.token();
  return token.empty() ? "" : "Bearer " + token;
}

bool UpstreamConnector::probe() {
  std::unique_ptr<httplib::ClientImpl> client = makeClient();
  client->set_read_timeout(std::chrono::seconds(2));
  httplib::Headers headers{{"User-Agent", "kube-cache-proxy"}};
  if (auto auth = authorization(); !auth.empty()) headers.emplace("Authorization", std::move(auth));
  return static_cast<bool>(client->Get(upstream_.path_prefix + "/healthz", headers));
}

}  // namespace proxy::upstream
