#pragma once
// WebSocketStream: the ServerStream of a watch request that asks for a WebSocket, as
// kube-apiserver serves one (contract W2; handlers/watch.go HandleWS): until a watch
// starts it is the HTTP/1.1 stream under it (a refused watch gets its HTTP answer, a
// watch the cache does not serve is passed through as the upgrade it is); a cached watch
// answers the handshake exactly as golang.org/x/net/websocket does (handshake.h), then
// sends one message per event, text for JSON and binary for protobuf, and ends with a
// close frame (1000) at its deadline or after an ERROR event. What the client sends is
// read and dropped; its close (or a closed connection) ends the watch.
//
// The frames are Beast's (websocket::stream over the client connection); the handshake is
// written here, because Beast's own answer differs from Go's (a Server field, the case of
// Connection, a 426 for a bad version, a refused key length).

#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "proxy/asio_beast.h"
#include "proxy/http/http1_stream.h"
#include "proxy/request.h"
#include "proxy/stream.h"

namespace proxy::io {

class WebSocketConnection;

class WebSocketStream final : public ServerStream {
 public:
  WebSocketStream(Http1Stream& http, const Request& req);
  ~WebSocketStream() override;

  Protocol protocol() const override { return Protocol::WebSocket; }
  bool requestBodyPending() const override { return http_.requestBodyPending(); }
  std::optional<uint64_t> requestBodyLength() const override { return http_.requestBodyLength(); }
  asio::awaitable<size_t> readRequestBody(char* out, size_t max) override { return http_.readRequestBody(out, max); }
  asio::awaitable<void> refuseRequestBody() override { return http_.refuseRequestBody(); }

  // Answers before a handshake are HTTP, as the apiserver's before it upgrades.
  asio::awaitable<void> writeWhole(ResponseHead head, std::string_view body) override {
    return http_.writeWhole(std::move(head), body);
  }
  asio::awaitable<void> writeHead(ResponseHead head) override { return http_.writeHead(std::move(head)); }
  asio::awaitable<void> writeBody(std::span<const std::string_view> pieces) override { return http_.writeBody(pieces); }
  asio::awaitable<void> endBody() override { return http_.endBody(); }
  // The handshake, then the events. Null when the handshake was refused (its answer is
  // written, its code is refusedWith()).
  asio::awaitable<std::unique_ptr<EventWriter>> startEvents(ResponseHead head, EventStreamOptions options) override;
  void abort() override { http_.abort(); }
  unsigned refusedWith() const override { return refused_with_; }

  bool keepsConnection() const override { return !upgraded_ && refused_with_ == 0 && http_.keepsConnection(); }
  void closeConnectionAfter() override { http_.closeConnectionAfter(); }
  std::shared_ptr<ClientWatch> watchClient(std::function<void()> on_gone) override;
  asio::awaitable<void> endClientWatch(ClientWatch& watch) override;

  void setClient(ClientMetrics* client) override { http_.setClient(client); }
  SessionControl& control() override { return http_.control(); }
  UpgradableConnection* upgradable() override { return http_.upgradable(); }
  void limitSendBuffer(int bytes) override { http_.limitSendBuffer(bytes); }

 private:
  Http1Stream& http_;
  const Request& req_;
  std::unique_ptr<WebSocketConnection> ws_;  // after the handshake
  bool upgraded_ = false;
  unsigned refused_with_ = 0;
};

}  // namespace proxy::io
