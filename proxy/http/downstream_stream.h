#pragma once
// DownstreamStream: one client connection, plain or TLS, with the byte counting that
// attributes what it writes to the client it serves.

#include <chrono>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "proxy/asio_beast.h"
#include "proxy/observability/proxy_metrics.h"
#include "proxy/http/socket_io.h"

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

// One client connection, plain or TLS (gateway mode serves TLS), or none: the Session of
// an HTTP/2 stream (server_context.h), whose bytes are its connection's, has no transport
// of its own, and shutdown never reaches one (a stream is neither idle nor new). Satisfies
// Asio's AsyncReadStream/AsyncWriteStream so Beast's read and Asio's write work on it; the
// timeouts of the TCP layer bound the TLS operations above it too.
class DownstreamStream {
 public:
  using executor_type = TcpStream::executor_type;

  // TLS when `tls` is set (the handshake is the caller's), else plain TCP.
  DownstreamStream(asio::ip::tcp::socket&& socket, std::shared_ptr<asio::ssl::context> tls)
      : tls_(std::move(tls)), stream_(make(std::move(socket), tls_.get())) {}
  // No transport (an HTTP/2 stream's Session): closing and cancelling do nothing.
  DownstreamStream() : stream_(std::in_place_index<2>) {}

  executor_type get_executor() { return tcp().get_executor(); }
  TcpStream& tcp() { return stream_.index() == 0 ? std::get<0>(stream_) : beast::get_lowest_layer(std::get<1>(stream_)); }
  asio::ip::tcp::socket& socket() { return tcp().socket(); }
  TlsStream* tls() { return stream_.index() == 1 ? &std::get<1>(stream_) : nullptr; }
  bool none() const { return stream_.index() == 2; }
  // The socket's descriptor when bytes may be sent to it directly (plain TCP), else -1.
  int directDescriptor() { return stream_.index() == 0 ? std::get<0>(stream_).socket().native_handle() : -1; }

  void expires_after(std::chrono::steady_clock::duration d) { tcp().expires_after(d); }
  void expires_never() { tcp().expires_never(); }
  void cancel() {
    if (!none()) tcp().cancel();
  }
  // Ends the client's side: closes the connection.
  void close() {
    if (!none()) tcp().close();
  }
  // No more response bytes: half-closes the connection.
  void shutdownSend() {
    error_code ignored;
    socket().shutdown(asio::socket_base::shutdown_send, ignored);
  }
  // Cancels a read waiting for the client (ClientWatch).
  void cancelReads() {
    error_code ignored;
    socket().cancel(ignored);
  }
  void setSendBufferSize(int bytes) {
    error_code ignored;
    socket().set_option(asio::socket_base::send_buffer_size(bytes), ignored);
  }
  // The client whose metrics count the bytes written.
  void setClient(ClientMetrics* client) { tcp().rate_policy().client = client; }
  ClientMetrics* client() { return tcp().rate_policy().client; }
  // Bytes written straight to the socket (sendmsg fast paths), bypassing the stream's
  // rate policy, still count for the client's metrics.
  void countWritten(std::size_t n) {
    if (ClientMetrics* c = client(); c && n > 0) c->bytesSent(n);
  }

  // Sends what the kernel takes at once, straight to a plain TCP socket: an answer
  // that fits the send buffer (most do) then needs no Asio operation, no timer and no
  // completion posted to the event loop. Returns the bytes sent; 0 for TLS or a
  // full send buffer, where the caller's Asio write sends the rest. Throws when the
  // client is gone.
  size_t trySend(const char* data, size_t n) {
    const int fd = directDescriptor();
    if (fd < 0) return 0;
    const size_t sent = sendNow(fd, std::string_view(data, n));
    countWritten(sent);
    return sent;
  }
  // Reads what already arrived on a plain TCP socket into `buffer`, up to `max` bytes,
  // without waiting. nullopt when nothing is there yet (or not plain TCP), else the
  // bytes read: 0 when the client closed its side, -1 on an error.
  std::optional<long> tryReceive(beast::flat_buffer& buffer, size_t max) {
    const int fd = directDescriptor();
    if (fd < 0) return std::nullopt;
    const auto space = buffer.prepare(max);
    const std::optional<long> n = receiveNow(fd, static_cast<char*>(space.data()), space.size());
    if (n && *n > 0) buffer.commit(static_cast<size_t>(*n));
    return n;
  }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(error_code, size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          if (stream_.index() == 0) return std::get<0>(stream_).async_read_some(b, std::move(handler));
          std::get<1>(stream_).async_read_some(b, std::move(handler));
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
          if (auto* s = tls()) return s->async_read_some(b, std::move(handler));
          socket().async_read_some(b, std::move(handler));
        },
        token, buffers);
  }
  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(error_code, size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          if (stream_.index() == 0) return std::get<0>(stream_).async_write_some(b, std::move(handler));
          std::get<1>(stream_).async_write_some(b, std::move(handler));
        },
        token, buffers);
  }

 private:
  using Variant = std::variant<TcpStream, TlsStream, std::monostate>;
  static Variant make(asio::ip::tcp::socket&& socket, asio::ssl::context* tls) {
    if (tls) return Variant(std::in_place_index<1>, std::move(socket), *tls);
    return Variant(std::in_place_index<0>, std::move(socket));
  }

  std::shared_ptr<asio::ssl::context> tls_;  // outlives the SSL object made from it
  Variant stream_;
};

}  // namespace proxy::io
