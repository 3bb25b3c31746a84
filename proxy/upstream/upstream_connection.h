#pragma once
// UpstreamConnection: one connection to the upstream apiserver, plain or TLS.

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "proxy/asio_beast.h"
#include "proxy/http/downstream_stream.h"

namespace proxy::io {

// `buffer` holds bytes read past the end of the last parsed message (e.g. data after a
// 101). The TCP layer is the same counting stream as a client's; upstream connections
// leave its client unset.
struct UpstreamConnection {
  explicit UpstreamConnection(TcpStream&& tcp) : stream(std::in_place_index<0>, std::move(tcp)) {}
  UpstreamConnection(TcpStream&& tcp, asio::ssl::context& tls)
      : stream(std::in_place_index<1>, std::move(tcp), tls) {}

  std::variant<TcpStream, TlsStream> stream;
  beast::flat_buffer buffer;
  std::chrono::steady_clock::time_point idle_since;

  TcpStream& tcp() { return stream.index() == 0 ? std::get<0>(stream) : beast::get_lowest_layer(std::get<1>(stream)); }
  // Calls `f` with the plain or TLS stream (an async operation on it, usually).
  template <class F>
  auto visit(F&& f) {
    return std::visit(std::forward<F>(f), stream);
  }
  // Closes the socket; pending operations complete with operation_aborted.
  void close() {
    error_code ignored;
    tcp().socket().close(ignored);
  }
};
using UpstreamConnectionPtr = std::shared_ptr<UpstreamConnection>;

// Writes `data` to the upstream, bounded by `timeout`.
asio::awaitable<error_code> writeUpstream(UpstreamConnection& conn, const std::string& data,
                                          std::chrono::milliseconds timeout);
// Writes `data` to the upstream as one body piece, chunk-framed when `chunked`.
asio::awaitable<error_code> writeUpstreamBody(UpstreamConnection& conn, const char* data, size_t n, bool chunked,
                                              std::chrono::milliseconds timeout);

}  // namespace proxy::io
