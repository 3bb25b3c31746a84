#pragma once
// Http1Stream: the ServerStream of one request on an HTTP/1.1 connection (plain or TLS).
// It owns what HTTP/1.1 decides for an answer: the head's text, Content-Length or chunked
// framing (or, for an HTTP/1.0 client, a body that ends with the connection), the one
// keep-alive rule, Expect: 100-continue, and the one send loop, which hands stored bytes
// to sendmsg where they lie and waits on the event loop only when the socket is full.

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/asio_beast.h"
#include "proxy/http/downstream_stream.h"
#include "proxy/http/raw_parser.h"
#include "proxy/stream.h"

namespace proxy::io {

struct SessionControl;

// The connection a 101 (exec, attach, port-forward, an uncached WebSocket) turns into a
// byte pipe: the socket and the bytes already read from it.
class UpgradableConnection {
 public:
  virtual ~UpgradableConnection() = default;
  virtual DownstreamStream& connection() = 0;
  virtual beast::flat_buffer& readAhead() = 0;
};

// The timeouts an HTTP/1.1 answer runs under (Go's WriteTimeout per write, IdleTimeout
// for a request body that stops coming).
struct Http1Timeouts {
  std::chrono::milliseconds write{60000};
  std::chrono::milliseconds idle{90000};
};

// The one send loop of HTTP/1.1: every byte of `pieces`, gathered, from where they lie:
// sendmsg straight to a plain socket (no copy, no event-loop round trip while the socket
// takes them), the Asio write only for what does not fit, each write bounded by
// `timeout`. TLS encrypts in user space: one buffer-sequence write. Throws when the client
// cannot be written to.
asio::awaitable<void> sendGathered(DownstreamStream& connection, std::span<const std::string_view> pieces,
                                   std::chrono::milliseconds timeout);

class Http1Stream final : public ServerStream, public UpgradableConnection {
 public:
  // `parser` has read the request's head; its body (if any) is still to be read from
  // `connection` and `buffer`. `stopping` is the server's: a stopping server closes
  // connections after their answer.
  Http1Stream(DownstreamStream& connection, beast::flat_buffer& buffer, DownstreamParser& parser,
              SessionControl& control, const std::atomic<bool>& stopping, Http1Timeouts timeouts);

  Protocol protocol() const override { return Protocol::Http1; }
  bool requestBodyPending() const override { return !parser_.is_done(); }
  std::optional<uint64_t> requestBodyLength() const override;
  asio::awaitable<size_t> readRequestBody(char* out, size_t max) override;
  asio::awaitable<void> refuseRequestBody() override;

  asio::awaitable<void> writeWhole(ResponseHead head, std::string_view body) override;
  asio::awaitable<void> writeHead(ResponseHead head) override;
  asio::awaitable<void> writeBody(std::span<const std::string_view> pieces) override;
  asio::awaitable<void> endBody() override;
  asio::awaitable<std::unique_ptr<EventWriter>> startEvents(ResponseHead head, EventStreamOptions options) override;
  void abort() override { close_after_ = true; }

  bool keepsConnection() const override;
  void closeConnectionAfter() override { close_after_ = true; }
  std::shared_ptr<ClientWatch> watchClient(std::function<void()> on_gone) override;
  asio::awaitable<void> endClientWatch(ClientWatch& watch) override;

  void setClient(ClientMetrics* client) override { connection_.setClient(client); }
  SessionControl& control() override { return control_; }
  UpgradableConnection* upgradable() override { return this; }
  void limitSendBuffer(int bytes) override { connection_.setSendBufferSize(bytes); }

  // UpgradableConnection
  DownstreamStream& connection() override { return connection_; }
  beast::flat_buffer& readAhead() override { return buffer_; }

  // HTTP/1.0: no chunked framing; an unsized body ends with the connection.
  bool http10() const { return parser_.version < 11; }
  std::chrono::milliseconds writeTimeout() const { return timeouts_.write; }
  // sendGathered on this connection with the write timeout.
  asio::awaitable<void> send(std::span<const std::string_view> pieces);

 private:
  std::string formatHead(const ResponseHead& head);

  DownstreamStream& connection_;
  beast::flat_buffer& buffer_;
  DownstreamParser& parser_;
  SessionControl& control_;
  const std::atomic<bool>& stopping_;
  const Http1Timeouts timeouts_;
  bool chunked_ = false;       // the body being written is chunk-framed
  bool close_after_ = false;   // the connection ends after this answer
  bool continue_sent_ = false;
};

}  // namespace proxy::io
