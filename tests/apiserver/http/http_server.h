#pragma once
// HttpServer: HTTP/1.1 (optionally TLS with required client certificates) on
// Boost.Beast, one thread per connection with synchronous I/O. Thread per
// connection keeps watch streams trivial; 1,000 watches = 1,000 threads is fine
// for a test server.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "tests/apiserver/http/http_types.h"

namespace testapi {

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;  // 0: the kernel picks one
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string client_ca_file;  // when set, client certificates are required
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions opts, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; throws std::runtime_error on failure. Returns the port.
  uint16_t start();
  // Serves until stop(); call from one thread.
  void run();
  // Closes the listener and every connection, then returns once they are gone.
  void stop();
  // Connections accepted before this point in time are closed at once (control/refuse).
  void refuseUntil(std::chrono::steady_clock::time_point until);
  // The two halves of refuseUntil: new connections (and new requests on open ones) are
  // closed unanswered until `until`; every open connection is shut down now.
  void refuseNewUntil(std::chrono::steady_clock::time_point until);
  // Shuts down the open connections accepted up to `last` (lastConnection()'s answer when
  // the cut was decided), so that one a client opens just after is served.
  void closeConnections(uint64_t last = UINT64_MAX);
  uint64_t lastConnection() const;
  bool refusing() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace testapi
