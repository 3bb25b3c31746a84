#pragma once
// DownstreamStream: one client connection, plain or TLS, with the byte counting that
// attributes what it writes to the client it serves.

#include <chrono>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "proxy/asio_beast.h"
#include "proxy/proxy_metrics.h"

namespace proxy::io {

// Beast's rate-policy hook used only to count: every byte a downstream connection
// writes is added to the metrics of the client it serves (`client`, set per request;
// upstream connections leave it null). Never limits, so Beast never arms its rate timer.
class CountingRatePolicy {
 public:
  ClientMetrics* client = nullptr;

 private:
  friend beast::rate_policy_access;
  std::size_t available_read_bytes() const noexcept { return std::numeric_limits<std::size_t>::max(); }
  std::size_t available_write_bytes() const noexcept { return std::numeric_limits<std::size_t>::max(); }
  void transfer_read_bytes(std::size_t) const noexcept {}
  void transfer_write_bytes(std::size_t n) {
    if (client && n > 0) client->bytesSent(n);
  }
  void on_timer() const noexcept {}
};

using TcpStream = beast::basic_stream<asio::ip::tcp, asio::any_io_executor, CountingRatePolicy>;
using TlsStream = beast::ssl_stream<TcpStream>;

// One client connection, plain or TLS (gateway mode serves TLS). Satisfies Asio's
// AsyncReadStream/AsyncWriteStream so Beast's read and Asio's write work on it; the
// timeouts of the TCP layer bound the TLS operations above it too.
class DownstreamStream {
 public:
  using executor_type = TcpStream::executor_type;

  // TLS when `tls` is set (the handshake is the caller's), else plain TCP.
  DownstreamStream(asio::ip::tcp::socket&& socket, std::shared_ptr<asio::ssl::context> tls)
      : tls_(std::move(tls)), stream_(make(std::move(socket), tls_.get())) {}

  executor_type get_executor() { return tcp().get_executor(); }
  TcpStream& tcp() { return stream_.index() == 0 ? std::get<0>(stream_) : beast::get_lowest_layer(std::get<1>(stream_)); }
  asio::ip::tcp::socket& socket() { return tcp().socket(); }
  TlsStream* tls() { return stream_.index() == 1 ? &std::get<1>(stream_) : nullptr; }
  void expires_after(std::chrono::steady_clock::duration d) { tcp().expires_after(d); }
  void expires_never() { tcp().expires_never(); }
  void cancel() { tcp().cancel(); }
  void close() { tcp().close(); }
  // Bytes written straight to the socket (sendmsg fast paths), bypassing the stream's
  // rate policy, still count for the client's metrics.
  void countWritten(std::size_t n) {
    if (ClientMetrics* client = tcp().rate_policy().client; client && n > 0) client->bytesSent(n);
  }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(error_code, size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          std::visit([&](auto& s) { s.async_read_some(b, std::move(handler)); }, stream_);
        },
        token, buffers);
  }
  // A read that no timeout of the TCP layer bounds (watching for a client leaving while
  // the response's writes set and clear their own timeouts): the raw socket, or the
  // TLS stream (whose lower-layer reads start untimed while no write deadline is set).
  template <class MutableBuffers, class Token>
  auto async_read_some_untimed(const MutableBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(error_code, size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          if (auto* s = tls()) {
            s->async_read_some(b, std::move(handler));
          } else {
            socket().async_read_some(b, std::move(handler));
          }
        },
        token, buffers);
  }
  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(error_code, size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          std::visit([&](auto& s) { s.async_write_some(b, std::move(handler)); }, stream_);
        },
        token, buffers);
  }

 private:
  static std::variant<TcpStream, TlsStream> make(asio::ip::tcp::socket&& socket, asio::ssl::context* tls) {
    if (tls) return std::variant<TcpStream, TlsStream>(std::in_place_index<1>, std::move(socket), *tls);
    return std::variant<TcpStream, TlsStream>(std::in_place_index<0>, std::move(socket));
  }

  std::shared_ptr<asio::ssl::context> tls_;  // outlives the SSL object made from it
  std::variant<TcpStream, TlsStream> stream_;
};

// Writes `data` to the client, bounded by `timeout`. Throws on failure.
asio::awaitable<void> writeDownstream(DownstreamStream& stream, const std::string& data, std::chrono::milliseconds timeout);
// Writes one piece of a response body to the client, chunk-framed when `chunked`.
// Throws when the client is gone.
asio::awaitable<void> writeDownstreamBody(DownstreamStream& stream, const char* data, size_t n, bool chunked,
                                          std::chrono::milliseconds timeout);

}  // namespace proxy::io
