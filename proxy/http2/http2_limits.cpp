#include "proxy/http2/http2_limits.h"

#include <algorithm>

#include <fmt/format.h>

#include "proxy/server/server_options.h"

namespace proxy::io {
namespace {

// Go's maxHeaderListSize: MaxHeaderBytes plus 32 bytes of overhead for 10 typical fields.
constexpr size_t kHeaderListSlack = 320;

}  // namespace

Http2Limits http2Limits(const ServerOptions& options) {
  Http2Limits limits;
  limits.max_streams = options.http2_max_streams;
  // Go's scheduleHandler: the connection ends once more than 4x MaxConcurrentStreams
  // handlers wait to start.
  limits.max_waiting_handlers = 4 * static_cast<size_t>(options.http2_max_streams);
  limits.max_header_list_bytes = std::min<uint64_t>(options.max_header_bytes + kHeaderListSlack, UINT32_MAX);
  limits.idle = options.idle_timeout;
  limits.read_header = options.read_header_timeout;
  return limits;
}

void applyHttp2Options(nghttp2_option* option, const Http2Limits& limits) {
  // The proxy's own reset budget (ResetBudget) ends the connection with Go's code first;
  // nghttp2's, one token above it, only backs it up.
  nghttp2_option_set_stream_reset_rate_limit(option, limits.reset_burst + 1, limits.reset_rate);
  nghttp2_option_set_max_continuations(option, limits.max_continuations);
  nghttp2_option_set_max_settings(option, limits.max_settings);
  nghttp2_option_set_max_outbound_ack(option, limits.max_outbound_ack);
}

std::string describeHttp2Limits(const Http2Limits& l) {
  return fmt::format(
      "HTTP/2 limits per connection: {} concurrent streams and running handlers ({} more may wait, then GOAWAY "
      "ENHANCE_YOUR_CALM), RST_STREAM {} at once and {}/s (then GOAWAY ENHANCE_YOUR_CALM), {} CONTINUATION frames "
      "per header block, header list {} bytes, {} SETTINGS entries per frame, {} queued SETTINGS/PING ACKs, idle "
      "{} ms, header block {} ms",
      l.max_streams, l.max_waiting_handlers, l.reset_burst, l.reset_rate, l.max_continuations,
      l.max_header_list_bytes, l.max_settings, l.max_outbound_ack, l.idle.count(), l.read_header.count());
}

bool ResetBudget::spend(std::chrono::steady_clock::time_point now) {
  if (last_ != std::chrono::steady_clock::time_point{}) {
    const double seconds = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(static_cast<double>(burst_), tokens_ + seconds * static_cast<double>(rate_));
  }
  last_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

}  // namespace proxy::io
