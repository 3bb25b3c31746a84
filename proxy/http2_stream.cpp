// Http2Stream: an HTTP/2 stream presented to the request code as an HTTP/1.1 connection
// that carries one request (see the header).
#include "proxy/http2_stream.h"

#include <algorithm>
#include <cstring>

#include <boost/asio/post.hpp>

#include "proxy/proxy_metrics.h"
#include "proxy/raw_parser.h"

namespace proxy::io {
namespace {

// The largest queue a drained stream keeps allocated.
constexpr size_t kKeptBufferBytes = 8 * 1024;

// Fields that describe one hop, not the message (the pass-through's list): HTTP/2 forbids
// the connection-specific ones (RFC 9113 8.2.2), so they are dropped from responses and
// never made for requests. Content-Length stays: it describes the DATA frames too.
bool hopOnly(std::string_view name) { return isHopByHopHeader(name) && !headerNameEquals(name, "content-length"); }

}  // namespace

// The response the request code writes, parsed as it is written: the head into fields for
// HEADERS, the body (chunk framing removed) into the stream's queue.
struct Http2Stream::ResponseParser final : http::basic_parser<false> {
  explicit ResponseParser(Http2Stream& s) : stream(s) {
    header_limit(64u << 20);  // a pass-through head is the upstream's; it was read within limits
    body_limit(kUnlimitedBody);
    eager(true);
  }
  Http2Stream& stream;
  unsigned status = 0;
  HeaderList headers;

 private:
  void on_request_impl(http::verb, beast::string_view, beast::string_view, int, error_code&) override {}
  void on_response_impl(int code, beast::string_view, int, error_code&) override { status = static_cast<unsigned>(code); }
  void on_field_impl(http::field, beast::string_view name, beast::string_view value, error_code&) override {
    headers.emplace_back(std::string(name.data(), name.size()), std::string(value.data(), value.size()));
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  size_t on_body_impl(beast::string_view body, error_code&) override {
    stream.queueBody(body.data(), body.size());
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override {
    stream.queueBody(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(error_code&) override { stream.response_done_ = true; }
};

Http2Stream::Http2Stream(asio::any_io_executor executor, Http2StreamOwner* owner, int32_t id)
    : executor_(executor),
      owner_(owner),
      id_(id),
      parser_(std::make_unique<ResponseParser>(*this)),
      deadline_timer_(executor) {}

Http2Stream::~Http2Stream() = default;

void Http2Stream::addRequestHeader(std::string_view name, std::string_view value) {
  request_head_bytes_ += name.size() + value.size() + 4;
  if (name == ":method") {
    method_ = value;
  } else if (name == ":path") {
    path_ = value;
  } else if (name == ":authority") {
    authority_ = value;
  } else if (!name.empty() && name[0] != ':' && !hopOnly(name)) {
    request_headers_.emplace_back(std::string(name), std::string(value));
  }
}

bool Http2Stream::requestHeadersDone(bool end_stream) {
  if (method_.empty() || path_.empty() || method_ == "CONNECT") return false;
  head_request_ = method_ == "HEAD";
  if (head_request_) parser_->skip(true);
  std::string head = method_ + " " + path_ + " HTTP/1.1\r\n";
  bool has_host = false;
  bool has_length = false;
  std::string cookies;  // HTTP/2 may split the cookie field; HTTP/1.1 wants one (RFC 9113 8.2.3)
  for (const auto& [name, value] : request_headers_) {
    if (name == "cookie") {
      cookies += (cookies.empty() ? "" : "; ") + value;
      continue;
    }
    has_host = has_host || name == "host";
    has_length = has_length || name == "content-length";
    head += name + ": " + value + "\r\n";
  }
  if (!cookies.empty()) head += "cookie: " + cookies + "\r\n";
  if (!has_host && !authority_.empty()) head += "host: " + authority_ + "\r\n";
  chunked_request_ = !end_stream && !has_length;
  if (chunked_request_) head += "transfer-encoding: chunked\r\n";
  head += "\r\n";
  request_headers_.clear();
  inbound_ += head;
  if (end_stream) request_ended_ = true;
  serveParkedRead();
  return true;
}

void Http2Stream::addRequestData(const uint8_t* data, size_t n) {
  if (n == 0) return;
  unconsumed_payload_ += n;
  if (chunked_request_) {
    char size_line[24];
    const int len = std::snprintf(size_line, sizeof size_line, "%zx\r\n", n);
    inbound_.append(size_line, static_cast<size_t>(len));
  }
  inbound_.append(reinterpret_cast<const char*>(data), n);
  if (chunked_request_) inbound_ += "\r\n";
  serveParkedRead();
}

void Http2Stream::requestEnded() {
  if (request_ended_) return;
  request_ended_ = true;
  if (chunked_request_) inbound_ += "0\r\n\r\n";
  serveParkedRead();
}

void Http2Stream::closed() {
  if (closed_) return;
  closed_ = true;
  owner_ = nullptr;
  deadline_timer_.cancel();
  failParked(asio::error::connection_reset);
}

std::optional<size_t> Http2Stream::readBody(uint8_t* out, size_t n, bool& eof) {
  const size_t available = outbound_.size() - outbound_offset_;
  eof = false;
  if (available == 0 && !response_done_) {
    deferred_ = true;
    return std::nullopt;
  }
  const size_t k = std::min(available, n);
  std::memcpy(out, outbound_.data() + outbound_offset_, k);
  outbound_offset_ += k;
  if (outbound_offset_ == outbound_.size()) {
    // Drained: a watch that queued a burst gives the memory back rather than keeping it
    // for the rest of its life (10,000 watches x 64 KiB); small events reuse theirs.
    if (outbound_.capacity() > kKeptBufferBytes) {
      std::string().swap(outbound_);
    } else {
      outbound_.clear();
    }
    outbound_offset_ = 0;
  } else if (outbound_offset_ > kSendBufferBytes) {
    outbound_.erase(0, outbound_offset_);
    outbound_offset_ = 0;
  }
  eof = response_done_ && outbound_.empty();
  // Room for a waiting write: served after nghttp2's callback returns.
  if (parked_write_) asio::post(executor_, [self = shared_from_this()] { self->serveParkedWrite(); });
  return k;
}

void Http2Stream::asyncRead(asio::mutable_buffer buffer, IoHandler handler) {
  read_buffer_ = buffer;
  parked_read_ = std::move(handler);
  serveParkedRead();
  if (parked_read_) armDeadline();
}

void Http2Stream::serveParkedRead() {
  if (!parked_read_) return;
  const size_t available = inbound_.size() - inbound_offset_;
  if (available > 0 && read_buffer_.size() > 0) {
    const size_t k = std::min(available, read_buffer_.size());
    std::memcpy(read_buffer_.data(), inbound_.data() + inbound_offset_, k);
    inbound_offset_ += k;
    if (inbound_offset_ == inbound_.size()) {
      std::string().swap(inbound_);  // the request is read: nothing more comes but DATA
      inbound_offset_ = 0;
      // All queued DATA has been taken: the client may send as much again.
      if (unconsumed_payload_ > 0 && owner_) owner_->consumed(id_, unconsumed_payload_);
      unconsumed_payload_ = 0;
    }
    completeLater(std::move(parked_read_), {}, k);
    parked_read_ = nullptr;
  } else if (closed_) {
    completeLater(std::move(parked_read_), asio::error::connection_reset, 0);
    parked_read_ = nullptr;
  }
  // Otherwise the read waits: after the request's end that is until the client resets
  // the stream or leaves, which is what a read of a client connection reports.
}

void Http2Stream::asyncWrite(std::vector<asio::const_buffer> buffers, IoHandler handler) {
  write_buffers_ = std::move(buffers);
  parked_write_ = std::move(handler);
  serveParkedWrite();
  if (parked_write_) armDeadline();
}

void Http2Stream::serveParkedWrite() {
  if (!parked_write_) return;
  if (closed_ || failed_) {
    completeLater(std::move(parked_write_), asio::error::broken_pipe, 0);
    parked_write_ = nullptr;
    return;
  }
  const size_t queued = outbound_.size() - outbound_offset_;
  if (queued >= kSendBufferBytes) return;  // readBody makes room
  // Take what fits: a 50 MB list written at once must not be queued at once.
  size_t room = kSendBufferBytes - queued;
  size_t taken = 0;
  for (const asio::const_buffer& b : write_buffers_) {
    const size_t n = std::min(b.size(), room - taken);
    if (!parseResponse(static_cast<const char*>(b.data()), n)) {
      failed_ = true;
      if (owner_) owner_->resetStream(id_);
      completeLater(std::move(parked_write_), asio::error::broken_pipe, 0);
      parked_write_ = nullptr;
      return;
    }
    taken += n;
    if (taken == room) break;
  }
  write_buffers_.clear();
  if (client && taken > 0) client->bytesSent(taken);
  completeLater(std::move(parked_write_), {}, taken);
  parked_write_ = nullptr;
}

bool Http2Stream::parseResponse(const char* data, size_t n) {
  if (response_done_) return true;  // bytes after the response (none are expected) are dropped
  std::string_view input(data, n);
  if (!unparsed_.empty()) {
    unparsed_.append(data, n);
    input = unparsed_;
  }
  size_t used_total = 0;
  while (used_total < input.size() && !parser_->is_done()) {
    error_code ec;
    const size_t used = parser_->put(asio::buffer(input.data() + used_total, input.size() - used_total), ec);
    used_total += used;
    if (ec == http::error::need_more) break;
    if (ec) return false;
    if (parser_->is_header_done() && !head_submitted_) {
      if (parser_->status == 100) {  // an interim answer to Expect: 100-continue; HTTP/2 clients need none
        parser_ = std::make_unique<ResponseParser>(*this);
        if (head_request_) parser_->skip(true);
        continue;
      }
      onResponseHead();
      if (failed_) return false;
    }
    if (used == 0) break;
  }
  if (parser_->is_header_done() && !head_submitted_) onResponseHead();
  if (failed_) return false;
  std::string rest(input.substr(std::min(used_total, input.size())));
  if (parser_->is_done()) rest.clear();
  unparsed_ = std::move(rest);
  if (response_done_ && deferred_ && owner_) {
    deferred_ = false;
    owner_->resumeData(id_);
  }
  return true;
}

void Http2Stream::onResponseHead() {
  head_submitted_ = true;
  if (parser_->status == 101 || parser_->status < 200) {
    // An upgrade (exec, attach, port-forward over SPDY or WebSocket) needs HTTP/1.1:
    // client-go and kubectl ask for those on HTTP/1.1 connections.
    failed_ = true;
    return;
  }
  HeaderList headers;
  headers.reserve(parser_->headers.size());
  for (auto& [name, value] : parser_->headers) {
    if (hopOnly(name)) continue;
    headers.emplace_back(asciiLower(name), std::move(value));
  }
  const bool has_body = !(parser_->is_done() && outbound_.size() == outbound_offset_);
  if (owner_) owner_->submitResponse(id_, parser_->status, headers, has_body);
}

void Http2Stream::queueBody(const char* data, size_t n) {
  if (n == 0) return;
  outbound_.append(data, n);
  if (deferred_ && owner_ && head_submitted_) {
    deferred_ = false;
    owner_->resumeData(id_);
  }
}

void Http2Stream::finish() {
  if (closed_ || failed_) return;
  if (head_submitted_ && !response_done_ && !parser_->is_done()) {
    error_code ec;
    parser_->put_eof(ec);  // a body delimited by the connection's end ends here
    if (ec || !parser_->is_done()) failed_ = true;
  }
  if (!head_submitted_) failed_ = true;  // nothing answered: the client sees a reset, as a closed connection
  if (failed_) {
    if (owner_) owner_->resetStream(id_);
    return;
  }
  if (deferred_ && owner_) {
    deferred_ = false;
    owner_->resumeData(id_);
  }
}

void Http2Stream::expiresAfter(std::chrono::steady_clock::duration d) {
  deadline_ = std::chrono::steady_clock::now() + d;
  if (parked_read_ || parked_write_) armDeadline();
}

void Http2Stream::expiresNever() {
  deadline_.reset();
  deadline_timer_.cancel();
}

void Http2Stream::cancel() { failParked(asio::error::operation_aborted); }

void Http2Stream::armDeadline() {
  if (!deadline_) return;
  deadline_timer_.expires_at(*deadline_);
  deadline_timer_.async_wait([weak = weak_from_this()](const error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || !self->deadline_ || std::chrono::steady_clock::now() < *self->deadline_) return;
    if (!self->parked_read_ && !self->parked_write_) return;
    // As the TCP stream's timeout closes its socket, this ends the stream.
    self->failed_ = true;
    if (self->owner_) self->owner_->resetStream(self->id_);
    self->failParked(beast::error::timeout);
  });
}

void Http2Stream::failParked(error_code ec) {
  if (parked_read_) {
    completeLater(std::move(parked_read_), ec, 0);
    parked_read_ = nullptr;
  }
  if (parked_write_) {
    completeLater(std::move(parked_write_), ec, 0);
    parked_write_ = nullptr;
  }
}

void Http2Stream::completeLater(IoHandler handler, error_code ec, size_t n) {
  // Never inline: the caller may be inside nghttp2's callbacks or the operation's initiation.
  asio::post(executor_, [handler = std::move(handler), ec, n] { handler(ec, n); });
}

}  // namespace proxy::io
