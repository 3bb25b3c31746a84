#pragma once
// Internal to the proxy's event-loop translation units (http_server.cpp,
// passthrough.cpp, upstream_pool.cpp, cached_read.cpp, cached_watch.cpp): the only
// header that includes Asio and Beast, which cost tens of seconds per translation
// unit to compile. Public headers forward-declare instead.
//
// Threading model: one io_context per io thread. A downstream connection, every
// coroutine serving it, and every upstream connection it uses live on that one
// thread, so nothing here needs a lock or a strand. Only `Upstream` (shared,
// immutable after construction apart from the token source) crosses threads.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "proxy/api_status.h"
#include "proxy/bearer_token_source.h"
#include "proxy/header_filter.h"
#include "proxy/proxy_metrics.h"
#include "proxy/request_info.h"
#include "proxy/server_options.h"
#include "proxy/upstream_options.h"

namespace proxy {
class ProxyMetrics;
}
namespace watch {
class CachedResource;
class UpstreamHealth;
}

namespace proxy::io {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

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

// One connection to the upstream apiserver, plain or TLS. `buffer` holds bytes
// read past the end of the last parsed message (e.g. data after a 101).
struct UpstreamConnection {
  explicit UpstreamConnection(TcpStream&& tcp) : stream(std::in_place_index<0>, std::move(tcp)) {}
  UpstreamConnection(TcpStream&& tcp, asio::ssl::context& tls)
      : stream(std::in_place_index<1>, std::move(tcp), tls) {}

  std::variant<TcpStream, TlsStream> stream;
  beast::flat_buffer buffer;
  std::chrono::steady_clock::time_point idle_since;

  TcpStream& tcp() { return stream.index() == 0 ? std::get<0>(stream) : beast::get_lowest_layer(std::get<1>(stream)); }
  // Closes the socket; pending operations complete with operation_aborted.
  void close() {
    error_code ignored;
    tcp().socket().close(ignored);
  }
};
using UpstreamConnectionPtr = std::shared_ptr<UpstreamConnection>;

// Why the upstream could not be reached; `kind` labels kube_cache_proxy_upstream_errors_total.
struct UpstreamFailure : std::runtime_error {
  UpstreamFailure(Reason r, std::string k, const std::string& message)
      : std::runtime_error(message), reason(r), kind(std::move(k)) {}
  Reason reason;
  std::string kind;  // connect, timeout, tls, io
};

// The upstream apiserver as every io thread sees it. Thread-safe.
class Upstream {
 public:
  Upstream(const UpstreamOptions& options, ProxyMetrics& metrics);
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  const UpstreamOptions& options() const { return options_; }
  // "https://10.0.0.1:6443", as used in error messages.
  const std::string& url() const { return url_; }
  const std::string& hostHeader() const { return host_header_; }
  asio::ssl::context* tls() { return tls_.get(); }
  std::string bearerToken() { return tokens_.token(); }
  ProxyMetrics& metrics() { return metrics_; }
  // "error trying to reach upstream <url>: <detail>"
  std::string reachError(const std::string& detail) const;
  // The breaker every connection to the upstream reports to; null when not set (tests).
  // Set before the server starts.
  void setHealth(std::shared_ptr<watch::UpstreamHealth> health) { health_ = std::move(health); }
  watch::UpstreamHealth* health() const { return health_.get(); }

 private:
  const UpstreamOptions options_;
  ProxyMetrics& metrics_;
  std::string url_;
  std::string host_header_;
  std::unique_ptr<asio::ssl::context> tls_;  // null for scheme http
  BearerTokenSource tokens_;
  std::shared_ptr<watch::UpstreamHealth> health_;
};

// Keep-alive connections to the upstream owned by one io thread. Not thread-safe:
// use only from coroutines running on `ctx`.
class UpstreamPool {
 public:
  UpstreamPool(Upstream& upstream, asio::io_context& ctx, const ServerOptions& options);
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  Upstream& upstream() { return upstream_; }
  // An idle pooled connection when `allow_reuse` and one is alive, else a new one.
  // Throws UpstreamFailure.
  asio::awaitable<UpstreamConnectionPtr> acquire(bool allow_reuse, bool& reused);
  // Returns a connection whose last response was read completely.
  void release(UpstreamConnectionPtr conn);
  void closeAll();

 private:
  asio::awaitable<UpstreamConnectionPtr> connect();

  Upstream& upstream_;
  asio::io_context& ctx_;
  const size_t max_idle_;
  const std::chrono::milliseconds idle_timeout_;
  std::vector<UpstreamConnectionPtr> idle_;  // most recently used last
};

// What a session shares with the request it is serving, so that server
// shutdown can interrupt a stream: `stopping` asks the relay to end the
// response cleanly; when `streaming`, `active` is closed to wake it. Ordinary
// in-flight requests are left to finish within the drain.
struct SessionControl {
  bool stopping = false;
  bool streaming = false;  // a long-running response or an upgraded connection
  UpstreamConnectionPtr active;
  // A stream served by the proxy itself (a cached watch) has no upstream connection to
  // close: stop() calls this instead, on the session's io thread.
  std::function<void()> interrupt;
};

// An HTTP/1.1 message parser that keeps the head as plain strings and copies
// body bytes into a caller-provided buffer (like http::buffer_body). Beast's
// own message type stores field lengths in 16 bits and throws from inside the
// read operation for a longer value, which would strand the connection; Go (so
// the apiserver) accepts any field up to MaxHeaderBytes, and so must we.
template <bool isRequest>
class RawParser final : public http::basic_parser<isRequest> {
 public:
  std::string method;  // requests
  std::string target;  // requests
  unsigned status = 0;  // responses
  std::string reason;   // responses
  int version = 11;
  HeaderList headers;

  // Body bytes parsed next go to [data, data + size); body_used() counts them.
  void setBodyBuffer(char* data, size_t size) {
    out_ = data;
    out_size_ = size;
    out_used_ = 0;
  }
  size_t bodyUsed() const { return out_used_; }

 private:
  void on_request_impl(http::verb, beast::string_view method_str, beast::string_view target_str, int v,
                       error_code&) override {
    method.assign(method_str.data(), method_str.size());
    target.assign(target_str.data(), target_str.size());
    version = v;
  }
  void on_response_impl(int code, beast::string_view reason_str, int v, error_code&) override {
    status = static_cast<unsigned>(code);
    reason.assign(reason_str.data(), reason_str.size());
    version = v;
  }
  void on_field_impl(http::field, beast::string_view name, beast::string_view value, error_code&) override {
    headers.emplace_back(std::string(name.data(), name.size()), std::string(value.data(), value.size()));
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  size_t on_body_impl(beast::string_view body, error_code& ec) override { return take(body, ec); }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code& ec) override { return take(body, ec); }
  void on_finish_impl(error_code&) override {}

  // Same contract as buffer_body's reader: copy what fits, report need_buffer
  // when bytes are left over so the caller drains the buffer and calls again.
  size_t take(beast::string_view body, error_code& ec) {
    const size_t n = std::min(body.size(), out_size_ - out_used_);
    if (n > 0) std::memcpy(out_ + out_used_, body.data(), n);
    out_used_ += n;
    if (n < body.size()) ec = http::error::need_buffer;
    return n;
  }

  char* out_ = nullptr;
  size_t out_size_ = 0;
  size_t out_used_ = 0;
};

using DownstreamParser = RawParser<true>;
using UpstreamParser = RawParser<false>;

// "No limit" for a parser's body_limit. Beast 1.74 compares the length against
// an empty optional as if it were smaller than every value (so boost::none
// rejects every sized body); the largest value is the working equivalent.
inline constexpr uint64_t kUnlimitedBody = std::numeric_limits<uint64_t>::max();

// A client request whose head has been read; its body (if any) is still in
// `parser`/`buffer`/`stream`. `method`, `target` and `headers` are moved out of the parser.
struct DownstreamRequest {
  DownstreamStream& stream;
  beast::flat_buffer& buffer;
  DownstreamParser& parser;
  std::string method;
  std::string target;
  HeaderList headers;
  RequestInfo info;
  std::string client_ip;
  bool keep_alive = true;
  bool http10 = false;
  // Gateway mode: the authenticated user's name ("" before authentication or in a sidecar),
  // the credential a pass-through request carries upstream instead of the
  // proxy's own ("" keeps the proxy's), and headers added for it (impersonation).
  std::string caller;
  std::string upstream_token;
  HeaderList upstream_identity_headers;
};

struct ForwardOutcome {
  unsigned code = 0;
  bool keep_connection = false;  // the downstream connection can serve another request
  bool long_running = false;     // watch/stream/upgrade: excluded from latency
};

// Read-your-writes for one write (proxy/write_sync.h): its answer waits until the
// cache of `cached` shows the write, at most `timeout`.
struct WriteSyncTarget {
  std::shared_ptr<watch::CachedResource> cached;
  std::string request_namespace;  // the store namespace the request names ("" cluster-scoped)
  std::chrono::milliseconds timeout;
  ProxyMetrics& metrics;
};

// Forwards one request to the upstream and relays the answer (or answers a
// Status when the upstream cannot be reached, at once while it is known down).
asio::awaitable<ForwardOutcome> forwardToUpstream(DownstreamRequest& req, UpstreamPool& pool, SessionControl& control,
                                                  const ServerOptions& options, const WriteSyncTarget* sync = nullptr);

// Writes `data` to the client, bounded by `timeout`. Throws on failure.
asio::awaitable<void> writeDownstream(DownstreamStream& stream, const std::string& data, std::chrono::milliseconds timeout);

// A small request to the upstream with the proxy's own credentials (a review, a fence
// read): status and body, the body at most `max_body` bytes. Throws UpstreamFailure when
// the upstream cannot be reached or the exchange fails or exceeds `timeout`.
struct UpstreamReply {
  unsigned code = 0;
  std::string body;
};
asio::awaitable<UpstreamReply> callUpstream(UpstreamPool& pool, const std::string& method, const std::string& path,
                                            const std::string& body, std::chrono::milliseconds timeout,
                                            size_t max_body, const ServerOptions& options,
                                            const std::string& accept = "application/json");

// A complete response carrying a Status body (or plain text), ready to write.
std::string formatAnswer(const HttpAnswer& answer, bool keep_alive);

}  // namespace proxy::io
