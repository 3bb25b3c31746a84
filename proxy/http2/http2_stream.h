#pragma once
// Http2Stream: the ServerStream of one HTTP/2 stream (RFC 9113) on nghttp2, through its
// connection (proxy/http2/http2_session.cpp). The request comes as fields nghttp2 decoded
// (Http2RequestHead, made into a Request once) and DATA; the answer goes out as HEADERS
// made from the ResponseHead and DATA frames that nghttp2's data provider takes from the
// stream's OutboundQueue into the connection's WriteBatch (NGHTTP2_DATA_FLAG_NO_COPY):
// shared watch frames are referenced, never copied into the stream, and a plain TCP
// connection hands them to sendmsg where they lie.
//
// Back-pressure: a write waits while kSendBufferBytes are queued (the client's window for
// this stream is closed), on a timer that nghttp2's taking bytes cancels; the other streams
// of the connection go on. A client that stops reading holds at most that much per stream.
//
// Lives on its connection's io thread and is used by one request coroutine at a time; the
// connection calls the "connection's side" from nghttp2's callbacks.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "proxy/asio_beast.h"
#include "proxy/http/gzip_writer.h"
#include "proxy/http2/http2_fields.h"
#include "proxy/http2/outbound_queue.h"
#include "proxy/request.h"
#include "proxy/stream.h"

namespace proxy::io {

struct Session;

// What a stream asks of its connection. Called from the request coroutine, never from
// inside nghttp2's callbacks.
class Http2StreamOwner {
 public:
  virtual ~Http2StreamOwner() = default;
  // HEADERS for `head`, with END_STREAM when `end_stream`; else DATA follow from the
  // stream's data provider.
  virtual void submitHead(int32_t id, const ResponseHead& head, bool end_stream) = 0;
  // The data provider had nothing to send; now the stream has DATA, or its end.
  virtual void resumeData(int32_t id) = 0;
  // The request code took `n` bytes of DATA: the client may send as much again.
  virtual void consumed(int32_t id, size_t n) = 0;
  virtual void resetStream(int32_t id, uint32_t error_code) = 0;
  // Writes what nghttp2 has ready now, on the caller's turn, when the connection's writer
  // waits for work and the socket takes it all (plain TCP only): a large answer's write
  // then returns without two trips through the event loop per batch, as HTTP/1.1's
  // gathered write does. What the socket does not take is left to the writer.
  virtual void writeNow() = 0;
};

// Go's WriteTimeout for a write that waits for the client's window, IdleTimeout for a
// request body that stops coming.
struct Http2Timeouts {
  std::chrono::milliseconds write{60000};
  std::chrono::milliseconds idle{90000};
};

class Http2Stream final : public ServerStream {
 public:
  // The connection's writer gathers every stream's frames into 64 KiB socket writes, so
  // a stream needs no more queued to keep the pipe full; a stalled stream holds at most
  // this (10,000 stalled streams at most 640 MiB, of frames shared with other watchers).
  static constexpr size_t kSendBufferBytes = 64 * 1024;

  // `session`: the stream's hold for shutdown and its connection's client certificate.
  Http2Stream(asio::any_io_executor executor, Http2StreamOwner& owner, int32_t id, std::shared_ptr<Session> session,
              Http2Timeouts timeouts, size_t max_header_list_bytes);
  ~Http2Stream() override;
  Http2Stream(const Http2Stream&) = delete;
  Http2Stream& operator=(const Http2Stream&) = delete;

  // The connection's side.
  int32_t id() const { return id_; }
  const std::shared_ptr<Session>& session() const { return session_; }
  Http2RequestHead& requestHead() { return head_; }
  // The request, made of the head once its fields are complete (start()).
  Request& request() { return *request_; }
  // The head is complete: false for a request this server does not take (the connection
  // resets the stream). `end_stream`: no body follows.
  bool start(std::string client_ip, bool end_stream);
  // The request's header block has ended (start() was called).
  bool started() const { return started_; }
  // The stream is closed (reset by the client, or done): a handler not yet started for
  // it never starts.
  bool over() const { return closed_; }
  void addRequestData(const uint8_t* data, size_t n);
  void requestEnded();
  bool requestDone() const { return request_ended_; }
  // DATA received and not given back to the window (the connection's, once closed).
  size_t unconsumedPayload() const { return unconsumed_; }
  // nghttp2's data provider: the length of the next DATA frame (at most `max`), with
  // NO_COPY and EOF in `flags`, or NGHTTP2_ERR_DEFERRED while nothing is queued.
  ssize_t nextData(size_t max, uint32_t* flags);
  // nghttp2's send_data callback: the frame's payload into the write batch. Returns the
  // queue's taken() after it, for sent().
  uint64_t takeData(size_t n, WriteBatch& batch);
  // The write that took the queue's bytes up to `mark` has ended (or copied them): a
  // large write's borrowed bytes are the writer's again.
  void sent(uint64_t mark);
  // The frame with END_STREAM went out: the answer is complete.
  void answerSent() { answer_sent_ = true; }
  // The stream is over (reset by the client, closed, or the connection ended): waits
  // fail, a client watch learns that the client left unless the answer was complete.
  void closed();
  // The request coroutine is done: an answer left incomplete resets the stream.
  void finish();

  // ServerStream
  Protocol protocol() const override { return Protocol::Http2; }
  bool requestBodyPending() const override { return !request_ended_ || inbound_.size() > inbound_offset_; }
  std::optional<uint64_t> requestBodyLength() const override { return request_length_; }
  asio::awaitable<size_t> readRequestBody(char* out, size_t max) override;
  asio::awaitable<void> refuseRequestBody() override;
  asio::awaitable<void> writeWhole(ResponseHead head, std::string_view body) override;
  asio::awaitable<void> writeHead(ResponseHead head) override;
  asio::awaitable<void> writeBody(std::span<const std::string_view> pieces) override;
  asio::awaitable<void> endBody() override;
  asio::awaitable<std::unique_ptr<EventWriter>> startEvents(ResponseHead head, EventStreamOptions options) override;
  void abort() override { fail(kInternalError); }
  bool keepsConnection() const override { return true; }
  void closeConnectionAfter() override {}
  std::shared_ptr<ClientWatch> watchClient(std::function<void()> on_gone) override;
  asio::awaitable<void> endClientWatch(ClientWatch& watch) override;
  void setClient(ClientMetrics* client) override { client_ = client; }
  SessionControl& control() override;

  // For the stream's EventWriter (http2_event_writer.h).
  // Moves pieces from the front of `pieces` into the queue while there is room; returns
  // how many it moved.
  size_t queueEvents(std::vector<WirePiece>& pieces);
  // Waits until `bytes` more fit in the queue (or it is empty); throws as a write does.
  asio::awaitable<void> awaitRoom(size_t bytes);
  // Fails a wait in progress at once.
  void cancelWait();
  // Why the stream cannot be written to, if it cannot.
  error_code failure() const;

 private:
  static constexpr uint32_t kInternalError = 2;  // NGHTTP2_INTERNAL_ERROR, RFC 9113 7
  enum class Wait { Room, Sent, RequestData };

  bool ready(Wait what, uint64_t mark) const;
  asio::awaitable<void> waitFor(Wait what, uint64_t mark);
  // A large write that failed: waits until no write in flight still reads its bytes.
  asio::awaitable<void> releaseBorrowed();
  void throwIfFailed();
  void notify();
  // Resets the stream (unless it is over) and drops what it had queued.
  void fail(uint32_t error_code);
  // `n` more bytes of the body are queued: counted, and the data provider woken.
  void queued(size_t n);
  void postClientGone();

  asio::any_io_executor executor_;
  Http2StreamOwner& owner_;
  const int32_t id_;
  std::shared_ptr<Session> session_;
  const Http2Timeouts timeouts_;
  Http2RequestHead head_;
  std::optional<Request> request_;
  ClientMetrics* client_ = nullptr;

  // Request body: DATA not yet read, from inbound_offset_.
  std::string inbound_;
  size_t inbound_offset_ = 0;
  size_t unconsumed_ = 0;
  bool request_ended_ = false;
  bool body_refused_ = false;
  std::optional<uint64_t> request_length_;
  bool head_request_ = false;

  // Answer.
  bool head_sent_ = false;
  bool body_allowed_ = false;    // DATA may follow the HEADERS
  bool body_ended_ = false;      // everything of the body is queued
  std::optional<uint64_t> body_left_;  // a sized body's bytes still to come
  bool deferred_ = false;        // the data provider waits for resumeData
  bool answer_sent_ = false;
  OutboundQueue queue_;
  uint64_t sent_ = 0;  // the queue's bytes whose write has ended

  bool started_ = false;
  bool closed_ = false;
  bool reset_ = false;            // this side reset the stream
  bool cancel_requested_ = false;
  asio::steady_timer wake_;       // a waiting write or read; notify() cancels it
  bool waiting_ = false;
  std::shared_ptr<ClientWatch> client_watch_;
  std::function<void()> on_gone_;
};

}  // namespace proxy::io
