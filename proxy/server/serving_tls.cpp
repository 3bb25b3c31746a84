#include "proxy/server/serving_tls.h"

#include <sys/stat.h>

#include <stdexcept>

#include <boost/asio/ssl/context.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

namespace proxy {

namespace asio = boost::asio;

ServingTls::ServingTls(const ServerOptions& options, const cache::Clock& clock)
    : options_(options), clock_(clock), checked_(clock.now()) {
  context_ = build();
  signature_ = signature();
}

std::shared_ptr<asio::ssl::context> ServingTls::current() {
  std::lock_guard lock(mu_);
  const auto now = clock_.now();
  if (now - checked_ < std::chrono::seconds(1)) return context_;
  checked_ = now;
  const std::string sig = signature();
  if (sig == signature_) return context_;
  try {
    context_ = build();
    signature_ = sig;
    spdlog::info("reloaded the serving certificate from {}", options_.tls_cert_file);
  } catch (const std::exception& e) {
    spdlog::warn("keeping the previous serving certificate: {}", e.what());
  }
  return context_;
}

std::string ServingTls::signature() const {
  std::string out;
  for (const std::string* path : {&options_.tls_cert_file, &options_.tls_key_file, &options_.client_ca_file}) {
    struct stat st {};
    if (path->empty() || ::stat(path->c_str(), &st) != 0) {
      out += "-;";
      continue;
    }
    out += std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
           "." + std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  return out;
}

std::shared_ptr<asio::ssl::context> ServingTls::build() const {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  // TLS 1.2+, as the apiserver serves by default.
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_compression);
  // OpenSSL's record buffers go back while a connection has nothing in flight: an idle
  // watch connection then holds only Asio's.
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  ctx->use_certificate_chain_file(options_.tls_cert_file);
  ctx->use_private_key_file(options_.tls_key_file, asio::ssl::context::pem);
  if (SSL_CTX_check_private_key(native) != 1) {
    throw std::runtime_error(options_.tls_key_file + " does not match " + options_.tls_cert_file);
  }
  // ALPN as the apiserver offers it: h2 first, then http/1.1 (only http/1.1 with
  // --http2=false). A client that names neither gets no ALPN answer and speaks HTTP/1.1.
  SSL_CTX_set_alpn_select_cb(
      native,
      [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
         void* arg) -> int {
        static const unsigned char kBoth[] = "\x02h2\x08http/1.1";
        static const unsigned char kHttp11[] = "\x08http/1.1";
        const bool http2 = arg != nullptr;
        const unsigned char* server = http2 ? kBoth : kHttp11;
        const unsigned int server_len = http2 ? sizeof kBoth - 1 : sizeof kHttp11 - 1;
        unsigned char* selected = nullptr;
        if (SSL_select_next_proto(&selected, outlen, server, server_len, in, inlen) != OPENSSL_NPN_NEGOTIATED) {
          return SSL_TLSEXT_ERR_NOACK;
        }
        *out = selected;
        return SSL_TLSEXT_ERR_OK;
      },
      options_.http2 ? reinterpret_cast<void*>(1) : nullptr);
  if (!options_.client_ca_file.empty()) {
    ctx->load_verify_file(options_.client_ca_file);
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options_.client_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(native, names);  // clients pick their certificate by it
    }
    // Ask for a certificate, never require one (token callers have none). A certificate
    // that fails verification authenticates nobody: checked after the handshake.
    SSL_CTX_set_verify(native, SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
  }
  return ctx;
}

}  // namespace proxy
