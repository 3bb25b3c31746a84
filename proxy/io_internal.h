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

using TcpStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

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
  TcpStream& stream;
  beast::flat_buffer& buffer;
  DownstreamParser& parser;
  std::string method;
  std::string target;
  HeaderList headers;
  RequestInfo info;
  std::string client_ip;
  bool keep_alive = true;
  bool http10 = false;
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
asio::awaitable<void> writeDownstream(TcpStream& stream, const std::string& data, std::chrono::milliseconds timeout);

// A complete response carrying a Status body (or plain text), ready to write.
std::string formatAnswer(const HttpAnswer& answer, bool keep_alive);

}  // namespace proxy::io
