#pragma once
// Http2Stream: one HTTP/2 stream as the request code sees it, an HTTP/1.1 connection that
// carries exactly one request. Reads return the request as an HTTP/1.1 message (a head
// made from the HEADERS frame, then the DATA frames' bytes, chunk-framed when no
// content-length was given); writes take the HTTP/1.1 response the usual code writes,
// parse its head into the HEADERS frame and queue its body (de-chunked) for DATA frames.
// So every route (cache, pass-through, local endpoints, refusals) serves HTTP/2 without a
// second implementation, and the one parser per direction is the price (docs/design.md).
//
// Back-pressure: a write waits while more than kSendBufferBytes of body are queued, i.e.
// while the client's flow-control window for this stream is closed; other streams of the
// connection go on (nghttp2 schedules DATA per stream). Lives on its connection's io thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "proxy/asio_beast.h"
#include "proxy/header_filter.h"

namespace proxy {
class ClientMetrics;
}

namespace proxy::io {

// What a stream needs from its connection (proxy/http2_session.cpp). Called outside
// nghttp2's callbacks only.
class Http2StreamOwner {
 public:
  virtual ~Http2StreamOwner() = default;
  // The response head is known: submit HEADERS with a data provider over the stream.
  virtual void submitResponse(int32_t id, unsigned status, const HeaderList& headers, bool has_body) = 0;
  // Body bytes (or the end of the body) were queued while the data provider was deferred.
  virtual void resumeData(int32_t id) = 0;
  // The request code took `n` bytes of DATA payload: open the client's window by as much.
  virtual void consumed(int32_t id, size_t n) = 0;
  // The stream cannot complete its response (the request code failed, or timed out).
  virtual void resetStream(int32_t id) = 0;
};

class Http2Stream : public std::enable_shared_from_this<Http2Stream> {
 public:
  using IoHandler = std::function<void(error_code, size_t)>;
  // A write waits while this much body is queued and not yet taken into DATA frames. The
  // connection's writer takes frames from every stream for each 64 KiB socket write, so a
  // stream needs no more than that to keep the pipe full; a client that stops reading
  // holds at most this much per stream (so 10,000 stalled streams hold at most 640 MiB).
  static constexpr size_t kSendBufferBytes = 64 * 1024;

  Http2Stream(asio::any_io_executor executor, Http2StreamOwner* owner, int32_t id);
  ~Http2Stream();
  Http2Stream(const Http2Stream&) = delete;
  Http2Stream& operator=(const Http2Stream&) = delete;

  int32_t id() const { return id_; }
  asio::any_io_executor executor() const { return executor_; }

  // The connection's side, from nghttp2's callbacks: the request as it arrives.
  void addRequestHeader(std::string_view name, std::string_view value);
  // Bytes of the request's fields so far, as HTTP/2 counts a header list.
  size_t requestHeadBytes() const { return request_head_bytes_; }
  // The head is complete; `end_stream` when no body follows. False for a request HTTP/1.1
  // cannot carry (a missing :method or :path): the connection resets the stream.
  bool requestHeadersDone(bool end_stream);
  void addRequestData(const uint8_t* data, size_t n);
  void requestEnded();
  // The client reset the stream or the connection ended: every waiting and later
  // operation fails, as on a closed socket.
  void closed();
  // nghttp2's data provider: copies up to `n` body bytes to `out`; `eof` once the whole
  // body is out. nullopt: nothing queued yet (the provider defers).
  std::optional<size_t> readBody(uint8_t* out, size_t n, bool& eof);
  // DATA payload received and not yet read by the request code.
  size_t unconsumedPayload() const { return unconsumed_payload_; }

  // The request code's side (DownstreamStream): one read or write at a time each.
  void asyncRead(asio::mutable_buffer buffer, IoHandler handler);
  void asyncWrite(std::vector<asio::const_buffer> buffers, IoHandler handler);
  // Deadline of the operations started from now on (the TCP stream's expires_after).
  void expiresAfter(std::chrono::steady_clock::duration d);
  void expiresNever();
  // Fails the waiting operations with operation_aborted; the stream stays usable.
  void cancel();
  // The request code is done with the stream (its "connection close"): a body delimited
  // by the end of the connection ends here; a response left incomplete resets the stream.
  void finish();

  ClientMetrics* client = nullptr;  // bytes written are counted for this client

 private:
  struct ResponseParser;

  void completeLater(IoHandler handler, error_code ec, size_t n);
  // Feeds response bytes to the parser; false when they are not an HTTP/1.1 response.
  bool parseResponse(const char* data, size_t n);
  void onResponseHead();
  void queueBody(const char* data, size_t n);
  void serveParkedRead();
  void serveParkedWrite();
  void armDeadline();
  void failParked(error_code ec);

  asio::any_io_executor executor_;
  Http2StreamOwner* owner_;  // null once the connection is gone
  const int32_t id_;

  // Request: pseudo-headers and fields as received, then the HTTP/1.1 bytes to read.
  std::string method_, path_, authority_;
  size_t request_head_bytes_ = 0;
  HeaderList request_headers_;
  bool chunked_request_ = false;
  std::string inbound_;
  size_t inbound_offset_ = 0;
  size_t unconsumed_payload_ = 0;  // DATA bytes queued in `inbound_`, not yet given back
  bool request_ended_ = false;

  // Response: the parser, the head once parsed, the body not yet taken by nghttp2.
  std::unique_ptr<ResponseParser> parser_;
  std::string unparsed_;  // a head or chunk header split across writes
  bool head_submitted_ = false;
  bool response_done_ = false;
  bool head_request_ = false;
  std::string outbound_;
  size_t outbound_offset_ = 0;
  bool deferred_ = false;  // the data provider is waiting for resumeData

  bool closed_ = false;
  bool failed_ = false;  // the response cannot be completed
  asio::mutable_buffer read_buffer_;
  IoHandler parked_read_;
  std::vector<asio::const_buffer> write_buffers_;
  IoHandler parked_write_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  asio::steady_timer deadline_timer_;
};

}  // namespace proxy::io
