#pragma once
// ServerStream: the answer side of one request, whatever carries it: an HTTP/1.1
// connection (proxy/http/http1_stream.h), an HTTP/2 stream (proxy/http2/http2_stream.h) or
// a WebSocket (proxy/websocket/websocket_stream.h). Reads, watches, discovery, local
// endpoints and the pass-through write to it and never build or parse protocol text:
// Go's http.ResponseWriter and Envoy's StreamEncoder are the models. The request itself
// is a Request (proxy/request.h), parsed once by the same protocol.
//
// A stream lives on its connection's io thread and is used by one coroutine at a time.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "proxy/asio_beast.h"
#include "proxy/http/header_filter.h"
#include "watch/fanout/event_encoder.h"

namespace proxy {
class ClientMetrics;
}

namespace proxy::io {

struct SessionControl;
struct ClientWatch;
class UpgradableConnection;

enum class Protocol { Http1, Http2, WebSocket };

// The head of an answer. Framing is the stream's: `content_length` set sizes the body,
// unset streams it (chunked on HTTP/1.1, DATA frames up to END_STREAM on HTTP/2).
struct ResponseHead {
  unsigned status = 200;
  std::string reason;  // "" = the standard phrase; a relayed answer keeps the upstream's
  HeaderList headers;  // end-to-end fields only
  std::optional<uint64_t> content_length;
  // False when no body follows (the answer to HEAD, 204, 304): `content_length`, if set,
  // then describes the entity a GET would get.
  bool body = true;
};

// How a watch's events reach the client (W2): one encoded event after another, batched
// where the protocol allows (a chunk of HTTP/1.1, DATA frames of HTTP/2), one message
// each on a WebSocket. Shared frames are not copied into the writer.
class EventWriter {
 public:
  virtual ~EventWriter() = default;
  virtual void add(watch::FrameConstSharedPtr frame) = 0;
  void add(std::string&& frame) { add(watch::makeFrame(std::move(frame))); }
  // Bytes queued and not yet handed to the transport.
  virtual size_t bytes() const = 0;
  bool empty() const { return bytes() == 0; }
  // Hands the transport what it takes without waiting (never suspends: a dispatch
  // wake-up calls it); true when nothing is left queued. `ec` is set when the client is
  // gone.
  virtual bool trySend(error_code& ec) = 0;
  // Everything queued is out; throws when the client cannot be written to.
  virtual asio::awaitable<void> flush() = 0;
  // The stream's end as the protocol ends it (the last chunk, END_STREAM, a close frame).
  virtual asio::awaitable<void> end() = 0;
  // Fails a flush that waits for the client, at once (a watcher closed for being slow is
  // usually stuck writing to a client that does not read).
  virtual void cancel() = 0;
};

// What a watch stream's events are (W2): compressed per flush as kube-apiserver 1.37
// compresses watch-lists, and binary (protobuf) or text (JSON) for WebSocket messages.
struct EventStreamOptions {
  bool gzip = false;
  bool binary = false;
};

class ServerStream {
 public:
  virtual ~ServerStream() = default;
  virtual Protocol protocol() const = 0;

  // The request body (the pass-through reads it). Pending until its end was read;
  // `requestBodyLength` when the client sized it.
  virtual bool requestBodyPending() const = 0;
  virtual std::optional<uint64_t> requestBodyLength() const = 0;
  // Up to `max` bytes of the body into `out`: 0 at its end. Throws when the client left
  // or stopped sending for the idle timeout.
  virtual asio::awaitable<size_t> readRequestBody(char* out, size_t max) = 0;
  // After an answer that refuses the request (413): the rest of its body is not read.
  // HTTP/1.1 closes the connection once what is in flight has drained for a moment (Go's
  // rstAvoidanceDelay: closing with unread data sends a reset that can destroy the answer
  // in the client's buffer); HTTP/2 resets the stream.
  virtual asio::awaitable<void> refuseRequestBody() = 0;

  // A whole answer, head and body in as few sends as the transport allows.
  virtual asio::awaitable<void> writeWhole(ResponseHead head, std::string_view body) = 0;
  // The head of an answer whose body follows in writeBody calls and ends with endBody.
  virtual asio::awaitable<void> writeHead(ResponseHead head) = 0;
  // Body bytes, gathered from where they lie (one chunk of a streamed HTTP/1.1 body).
  virtual asio::awaitable<void> writeBody(std::span<const std::string_view> pieces) = 0;
  // A coroutine itself, so that `piece` lives in its frame while the write runs.
  asio::awaitable<void> writeBody(std::string_view piece) { co_await writeBody(std::span(&piece, 1)); }
  virtual asio::awaitable<void> endBody() = 0;
  // The head of a watch answer (on a WebSocket: the handshake's 101), then its events.
  // Null when the protocol refused to start the stream (a WebSocket handshake the client
  // got wrong): its answer is written, and refusedWith() gives its code.
  virtual asio::awaitable<std::unique_ptr<EventWriter>> startEvents(ResponseHead head, EventStreamOptions options) = 0;
  virtual unsigned refusedWith() const { return 0; }
  // The answer cannot be completed: the client learns it from a closed connection or a
  // reset stream, never from a body that merely ends early.
  virtual void abort() = 0;

  // Whether the connection serves another request after this answer (the one keep-alive
  // rule lives in each protocol's stream); an HTTP/2 stream never ends its connection.
  virtual bool keepsConnection() const = 0;
  // The connection closes after this answer (a body left unread, a refused upgrade).
  virtual void closeConnectionAfter() = 0;
  // For a long-running answer: `on_gone` runs on the io thread when the client leaves (a
  // closed connection, a reset stream, a WebSocket close). endClientWatch must complete
  // before the stream goes away.
  virtual std::shared_ptr<ClientWatch> watchClient(std::function<void()> on_gone) = 0;
  virtual asio::awaitable<void> endClientWatch(ClientWatch& watch) = 0;

  // The client whose metrics count the bytes written.
  virtual void setClient(ClientMetrics* client) = 0;
  // Shutdown's hold on the request (proxy/server/session_control.h).
  virtual SessionControl& control() = 0;
  // The HTTP/1.1 connection under the request, for a 101 splice; null where the protocol
  // cannot switch (HTTP/2).
  virtual UpgradableConnection* upgradable() { return nullptr; }
  // A live watch's socket send buffer cap (plain TCP only: kLiveSendBuffer's reason).
  virtual void limitSendBuffer(int /*bytes*/) {}
};

}  // namespace proxy::io
