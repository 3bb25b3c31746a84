#include "proxy/websocket/websocket_stream.h"

#include <array>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/websocket.hpp>
#include <spdlog/spdlog.h>

#include "proxy/answers.h"
#include "proxy/http/client_watch.h"
#include "proxy/websocket/handshake.h"

namespace proxy::io {
namespace websocket = beast::websocket;

namespace {

using asio::redirect_error;
using asio::use_awaitable;

// How long the end of a watch waits for the client's answer to its close frame (Go does
// not wait at all: it writes the frame and closes the connection).
constexpr auto kCloseWait = std::chrono::seconds(1);
// What a client's message is read into, a piece at a time, and dropped: a watch's client
// sends nothing (Go's IgnoreReceives), so nothing it sends is kept.
constexpr size_t kDiscardBytes = 4096;

}  // namespace

// Beast's next layer: the client connection, whose writes are dropped while Beast writes
// its own handshake answer (ours, Go's, went out before). Reads are untimed: a watch's
// idleness is its deadline's, and writes set their own timeout.
class WebSocketTransport {
 public:
  using executor_type = DownstreamStream::executor_type;

  explicit WebSocketTransport(DownstreamStream& connection) : connection_(connection) {}
  executor_type get_executor() { return connection_.get_executor(); }
  DownstreamStream& connection() { return connection_; }
  bool drop_writes = true;

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return connection_.async_read_some_untimed(buffers, std::forward<Token>(token));
  }
  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    if (!drop_writes) return connection_.async_write_some(buffers, std::forward<Token>(token));
    return asio::async_initiate<Token, void(error_code, size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          const size_t n = asio::buffer_size(b);
          asio::post(connection_.get_executor(), [h = std::move(handler), n]() mutable { h(error_code{}, n); });
        },
        token, buffers);
  }

 private:
  DownstreamStream& connection_;
};

// Beast's hooks for a transport of our own: tearing down is closing our side of the
// connection (the session closes the socket once the request is over).
void teardown(beast::role_type, WebSocketTransport& transport, error_code& ec) {
  transport.connection().socket().shutdown(asio::socket_base::shutdown_send, ec);
}
template <class Handler>
void async_teardown(beast::role_type, WebSocketTransport& transport, Handler&& handler) {
  error_code ec;
  transport.connection().socket().shutdown(asio::socket_base::shutdown_send, ec);
  asio::post(transport.get_executor(), [h = std::forward<Handler>(handler), ec]() mutable { h(ec); });
}
void beast_close_socket(WebSocketTransport& transport) { transport.connection().cancel(); }

class WebSocketConnection {
 public:
  explicit WebSocketConnection(DownstreamStream& connection) : transport_(connection), ws_(transport_) {
    ws_.auto_fragment(false);  // one frame per message, as Go's writer
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = kCloseWait;  // bounds the wait for the client's close answer
    timeouts.idle_timeout = websocket::stream_base::none();
    timeouts.keep_alive_pings = false;
    ws_.set_option(timeouts);
  }
  DownstreamStream& connection() { return transport_.connection(); }
  websocket::stream<WebSocketTransport&>& ws() { return ws_; }

  // Opens Beast's side of the stream: its handshake answer goes nowhere.
  asio::awaitable<void> open() {
    websocket::request_type synthetic;
    synthetic.method(http::verb::get);
    synthetic.target("/");
    synthetic.version(11);
    synthetic.set(http::field::host, "localhost");
    synthetic.set(http::field::upgrade, "websocket");
    synthetic.set(http::field::connection, "upgrade");
    synthetic.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
    synthetic.set(http::field::sec_websocket_version, "13");
    co_await ws_.async_accept(synthetic, use_awaitable);
    transport_.drop_writes = false;
  }

 private:
  WebSocketTransport transport_;
  websocket::stream<WebSocketTransport&> ws_;
};

namespace {

// One message per event; the queue is written by the coroutine (a message is one Beast
// write, which needs the event loop), so trySend never sends.
class WebSocketEventWriter final : public EventWriter {
 public:
  WebSocketEventWriter(WebSocketConnection& conn, bool binary, std::chrono::milliseconds write_timeout)
      : conn_(conn), binary_(binary), write_timeout_(write_timeout) {}

  void add(watch::FrameConstSharedPtr frame) override {
    bytes_ += frame->size();
    queue_.push_back(std::move(frame));
  }
  size_t bytes() const override { return bytes_; }
  bool trySend(error_code& ec) override {
    ec = {};
    return queue_.empty();
  }
  asio::awaitable<void> flush() override {
    auto& ws = conn_.ws();
    ws.binary(binary_);
    while (!queue_.empty()) {
      const watch::FrameConstSharedPtr frame = queue_.front();
      // A protobuf frame of the HTTP stream is a 4-byte length and a bare WatchEvent; a
      // message is the bare WatchEvent (handlers/watch.go's websocketFramer). A JSON
      // frame is the event's line, newline included, as the apiserver sends it.
      const std::string_view bytes = frame->bytes();
      const std::string_view payload = binary_ ? bytes.substr(4) : bytes;
      conn_.connection().expires_after(write_timeout_);
      co_await ws.async_write(asio::buffer(payload.data(), payload.size()), use_awaitable);
      conn_.connection().expires_never();
      bytes_ -= frame->size();
      queue_.pop_front();
    }
  }
  asio::awaitable<void> end() override {
    co_await flush();
    error_code ec;
    co_await conn_.ws().async_close(websocket::close_code::normal, redirect_error(use_awaitable, ec));
  }
  void cancel() override { conn_.connection().cancel(); }

 private:
  WebSocketConnection& conn_;
  const bool binary_;
  const std::chrono::milliseconds write_timeout_;
  std::deque<watch::FrameConstSharedPtr> queue_;
  size_t bytes_ = 0;
};

// Reads the client's frames and drops them (Beast answers pings and a close) until the
// client closes or leaves.
asio::awaitable<void> readUntilClosed(WebSocketConnection& conn, std::shared_ptr<ClientWatch> watch,
                                      std::function<void()> on_gone) {
  std::array<char, kDiscardBytes> sink;
  error_code ec;
  while (!ec) co_await conn.ws().async_read_some(asio::buffer(sink), redirect_error(use_awaitable, ec));
  if (ec != asio::error::operation_aborted) {
    watch->gone = true;
    on_gone();
  }
}

}  // namespace

WebSocketStream::WebSocketStream(Http1Stream& http, const Request& req) : http_(http), req_(req) {}

WebSocketStream::~WebSocketStream() = default;

asio::awaitable<std::unique_ptr<EventWriter>> WebSocketStream::startEvents(ResponseHead, EventStreamOptions options) {
  // The bearer-token subprotocol is taken out unless an Authorization header authenticated
  // the request first (the apiserver's authenticators run in that order).
  std::string protocols(req_.header("Sec-WebSocket-Protocol"));
  if (req_.header("Authorization").empty()) {
    ProtocolToken token = protocolToken(req_.headers);
    if (token.error) {
      const Status unauthorized{Reason::Unauthorized, "Unauthorized"};  // named: GCC 12 destroys a braced
      refused_with_ = co_await writeStatus(http_, req_, unauthorized);  // temporary in co_await twice
      co_return nullptr;
    }
    if (!token.token.empty()) protocols = std::move(token.remaining_protocols);
  }
  const WebSocketHandshake handshake = answerHandshake(req_.headers, protocols);
  const std::string_view answer = handshake.answer;
  co_await http_.send(std::span(&answer, 1));
  if (!handshake.accepted) {
    refused_with_ = handshake.code;
    http_.closeConnectionAfter();
    co_return nullptr;
  }
  upgraded_ = true;
  http_.closeConnectionAfter();
  ws_ = std::make_unique<WebSocketConnection>(http_.connection());
  co_await ws_->open();
  co_return std::make_unique<WebSocketEventWriter>(*ws_, options.binary, http_.writeTimeout());
}

std::shared_ptr<ClientWatch> WebSocketStream::watchClient(std::function<void()> on_gone) {
  if (!ws_) return http_.watchClient(std::move(on_gone));
  auto watch = std::make_shared<ClientWatch>();
  auto executor = http_.connection().get_executor();
  watch->done = std::make_shared<asio::steady_timer>(executor, std::chrono::steady_clock::time_point::max());
  asio::co_spawn(executor, readUntilClosed(*ws_, watch, std::move(on_gone)), [watch](std::exception_ptr) {
    watch->finished = true;
    watch->done->cancel();
  });
  return watch;
}

asio::awaitable<void> WebSocketStream::endClientWatch(ClientWatch& watch) {
  if (!ws_) co_return co_await http_.endClientWatch(watch);
  if (watch.finished) co_return;
  http_.connection().cancelReads();
  error_code ignored;
  co_await watch.done->async_wait(redirect_error(use_awaitable, ignored));
}

}  // namespace proxy::io
