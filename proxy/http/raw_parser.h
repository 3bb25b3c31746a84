#pragma once
// RawParser: an HTTP/1.1 message parser that keeps the head as plain strings and copies
// body bytes into a caller-provided buffer (like http::buffer_body). Beast's own message
// type stores field lengths in 16 bits and throws from inside the read operation for a
// longer value, which would strand the connection; Go (so the apiserver) accepts any
// field up to MaxHeaderBytes, and so must we.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "proxy/asio_beast.h"
#include "proxy/http/header_filter.h"

namespace proxy::io {

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

// Parses a request head already whole in `buffer` without an Asio read (a keep-alive
// client's next request, pipelined ones): true when it was. A malformed head sets `ec`;
// a partial one leaves it clear for Beast's read to go on from.
inline bool parseBufferedHead(DownstreamParser& parser, beast::flat_buffer& buffer, error_code& ec) {
  if (buffer.size() == 0) return false;
  buffer.consume(parser.put(buffer.data(), ec));
  if (ec == http::error::need_more) ec = {};
  return !ec && parser.is_header_done();
}

// "No limit" for a parser's body_limit. Beast 1.74 compares the length against
// an empty optional as if it were smaller than every value (so boost::none
// rejects every sized body); the largest value is the working equivalent.
inline constexpr uint64_t kUnlimitedBody = std::numeric_limits<uint64_t>::max();

}  // namespace proxy::io
