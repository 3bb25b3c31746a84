#pragma once
// Http2Limits: what one HTTP/2 connection may make the proxy do (issue 34), set through
// nghttp2's options and the connection's own counters, logged at start, and compared
// with Go's x/net/http2 server (kube-apiserver's) in docs/security.md:
// - running handlers at most the advertised MAX_CONCURRENT_STREAMS, counted as handlers
//   (a reset stream's handler counts until it has ended); streams beyond wait for one to
//   end, at most 4x as many, then GOAWAY ENHANCE_YOUR_CALM (Go's scheduleHandler);
// - RST_STREAM from the client at most `reset_burst` at once and `reset_rate` a second
//   after that, then GOAWAY ENHANCE_YOUR_CALM (nghttp2's bucket, as a backstop, one above);
// - CONTINUATION frames per header block, SETTINGS entries per frame, SETTINGS and PING
//   ACKs queued for a client that does not read (nghttp2 ends the connection beyond);
// - the header list (SETTINGS_MAX_HEADER_LIST_SIZE, as Go counts it: 431 beyond);
// - a connection without a running stream for `idle` is closed, one whose header block
//   does not end within `read_header` too (Go's IdleTimeout and ReadHeaderTimeout).
// Plain code.

#include <nghttp2/nghttp2.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace proxy {
struct ServerOptions;
}

namespace proxy::io {

struct Http2Limits {
  uint32_t max_streams = 100;
  size_t max_waiting_handlers = 400;
  uint64_t reset_burst = 1000;
  uint64_t reset_rate = 33;
  size_t max_continuations = 8;
  size_t max_settings = 32;
  size_t max_outbound_ack = 1000;
  size_t max_header_list_bytes = 0;
  std::chrono::milliseconds idle{90000};
  std::chrono::milliseconds read_header{32000};
};

Http2Limits http2Limits(const ServerOptions& options);
// The session's options for `limits` (the caller owns and deletes `option`).
void applyHttp2Options(nghttp2_option* option, const Http2Limits& limits);
// One line for the log at start.
std::string describeHttp2Limits(const Http2Limits& limits);

// The client's RST_STREAM budget: a token bucket of `burst` tokens refilled at `rate` a
// second, one token per reset (nghttp2's rule, which Debian's nghttp2 backports).
class ResetBudget {
 public:
  ResetBudget(uint64_t burst, uint64_t rate) : burst_(burst), rate_(rate), tokens_(static_cast<double>(burst)) {}
  // False once the client reset more than the budget allows.
  bool spend(std::chrono::steady_clock::time_point now);

 private:
  uint64_t burst_;
  uint64_t rate_;
  double tokens_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace proxy::io
