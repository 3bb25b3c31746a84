// One coroutine per client connection: the TLS handshake, then HTTP/2 (http2/) or
// HTTP/1.1 request heads read one after another while the connection is kept alive, each
// parsed into a Request and answered through an Http1Stream by handleRequest.
#include "proxy/server/session.h"

#include <ctime>
#include <variant>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include "proxy/auth/client_certificate.h"
#include "proxy/http/http1_errors.h"
#include "proxy/http/http1_stream.h"
#include "proxy/http2/http2_session.h"
#include "proxy/request.h"
#include "proxy/server/request_handler.h"
#include "proxy/websocket/websocket_stream.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

// Go adds 4096 bytes of slack to MaxHeaderBytes for the request line.
constexpr size_t kHeaderSlackBytes = 4096;
// First read on an idle keep-alive connection; the head parser reads the rest.
constexpr size_t kIdlePeekBytes = 4096;

// Read errors on a request head that end the connection without an answer, as Go's
// server ends it: the client left, went idle too long, or the server is stopping.
bool quietReadError(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof || ec == beast::error::timeout ||
         ec == asio::error::operation_aborted || ec == http::error::partial_message ||
         ec == asio::error::connection_reset;
}

std::string remoteAddress(asio::ip::tcp::socket& socket) {
  error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  return ec ? "" : remote.address().to_string();
}

// The steps of one connection's life. Lives in runSession's frame.
class SessionLoop {
 public:
  SessionLoop(ServerContext& server, Worker& worker, Session& session)
      : server_(server), options_(server.options), worker_(worker), session_(session) {}

  asio::awaitable<void> run(const std::string& client_ip);

 private:
  asio::awaitable<void> handshake();
  // False when the connection ends instead (closed, timed out, or a malformed head,
  // which got Go's plain-text 400 or 431).
  asio::awaitable<bool> readRequestHead(DownstreamParser& parser, bool first, const std::string& client_ip);
  // Reads and serves the next request; false when the connection ends after it.
  asio::awaitable<bool> serveNext(bool first, const std::string& client_ip);

  ServerContext& server_;
  const ServerOptions& options_;
  Worker& worker_;
  Session& session_;
};

asio::awaitable<void> SessionLoop::run(const std::string& client_ip) {
  // A connection accepted just before stop(), whose session was not yet registered when
  // stop() marked the others, ends here.
  if (session_.control.stopping || server_.stopping) co_return;
  const char* http2 = nullptr;  // how HTTP/2 was chosen, if it was
  if (session_.stream.tls()) {
    co_await handshake();
    if (negotiatedHttp2(session_.stream)) http2 = "alpn";
  } else if (options_.http2) {
    const Http2Preface preface =
        co_await readHttp2Preface(session_.stream, session_.buffer, options_.read_header_timeout);
    if (preface == Http2Preface::TimedOut) server_.metrics.connectionTimedOut("read_header");
    if (preface == Http2Preface::Closed || preface == Http2Preface::TimedOut) co_return;
    if (preface == Http2Preface::Present) http2 = "prior_knowledge";
  }
  if (http2) {
    server_.metrics.http2ConnectionOpened(http2);
    co_await serveHttp2(server_, worker_, session_, client_ip);
    co_return;
  }
  // The first request is served even when the server began stopping meanwhile (Go's
  // StateNew connections, see ProxyServer::stop); later ones are not.
  for (bool first = true; first || (!session_.control.stopping && !server_.stopping); first = false) {
    if (!co_await serveNext(first, client_ip)) break;
  }
}

asio::awaitable<bool> SessionLoop::serveNext(bool first, const std::string& client_ip) {
  DownstreamParser parser;
  if (!co_await readRequestHead(parser, first, client_ip)) co_return false;
  const auto arrived = server_.clock.now();
  Request req = Request::make(std::move(parser.method), std::move(parser.target), std::move(parser.headers), client_ip);
  Http1Stream out(session_.stream, session_.buffer, parser, session_.control, server_.stopping,
                  Http1Timeouts{options_.write_timeout, options_.idle_timeout});
  if (req.websocket) {
    WebSocketStream ws(out, req);
    co_await handleRequest(server_, worker_, session_, req, ws, arrived);
    co_return ws.keepsConnection();
  }
  co_await handleRequest(server_, worker_, session_, req, out, arrived);
  co_return out.keepsConnection();
}

asio::awaitable<void> SessionLoop::handshake() {
  TlsStream& tls_stream = *session_.stream.tls();
  error_code ec;
  session_.stream.expires_after(options_.read_header_timeout);
  co_await tls_stream.async_handshake(asio::ssl::stream_base::server, redirect_error(use_awaitable, ec));
  session_.stream.expires_never();
  if (ec) throw std::runtime_error("TLS handshake: " + ec.message());
  session_.certificate.ssl = tls_stream.native_handle();
  if (auto identity = auth::certificateIdentity(tls_stream.native_handle(), options_.refused_certificate_groups)) {
    session_.certificate.user = std::move(identity->user);
    session_.certificate.not_after = identity->not_after;
  }
}

asio::awaitable<bool> SessionLoop::readRequestHead(DownstreamParser& parser, bool first, const std::string& client_ip) {
  parser.header_limit(static_cast<uint32_t>(options_.max_header_bytes + kHeaderSlackBytes));
  parser.body_limit(kUnlimitedBody);  // pass-through bodies stream; the upstream limits them
  session_.idle = !first;
  session_.awaiting_first_request = first;
  error_code ec;
  // A keep-alive client's next request has usually arrived by the time the answer to
  // the previous one is written: taken and parsed without a timed Asio read.
  const auto arrived = first || session_.buffer.size() > 0 ? std::nullopt : session_.stream.tryReceive(session_.buffer, kIdlePeekBytes);
  if (arrived && *arrived <= 0) co_return false;  // closed, or failed
  const bool buffered = parseBufferedHead(parser, session_.buffer, ec);
  if (!buffered && !ec && !first && session_.buffer.size() == 0) {
    // Go's IdleTimeout: a keep-alive connection may wait this long for the
    // first byte of its next request; the head then has the read-header timeout.
    session_.stream.expires_after(options_.idle_timeout);
    const size_t n = co_await session_.stream.async_read_some(session_.buffer.prepare(kIdlePeekBytes),
                                                              redirect_error(use_awaitable, ec));
    session_.buffer.commit(n);
    if (ec == beast::error::timeout) server_.metrics.connectionTimedOut("idle");
    if (ec) co_return false;  // idle timeout, client closed, or shutdown: closed without an answer, as Go does
  }
  if (!buffered && !ec) {
    // The whole head within the read-header timeout, however slowly it trickles
    // in (slowloris); on expiry the connection closes without an answer, as Go's.
    session_.stream.expires_after(options_.read_header_timeout);
    co_await http::async_read_header(session_.stream, session_.buffer, parser, redirect_error(use_awaitable, ec));
    session_.stream.expires_never();
  }
  session_.idle = session_.awaiting_first_request = false;
  if (ec == beast::error::timeout) server_.metrics.connectionTimedOut("read_header");
  if (ec) {
    if (!quietReadError(ec)) {
      const std::string& answer = ec == http::error::header_limit ? headerTooLargeAnswer() : badRequestAnswer();
      spdlog::debug("bad request from {}: {}", client_ip, ec.message());
      const std::string_view text = answer;
      co_await sendGathered(session_.stream, std::span(&text, 1), options_.write_timeout);
    }
    co_return false;
  }
  co_return true;
}

}  // namespace

asio::awaitable<void> runSession(ServerContext& server, SessionPtr session, Worker& worker) {
  worker.sessions.insert(session);
  server.metrics.connectionOpened();
  const std::string client_ip = remoteAddress(session->stream.socket());
  try {
    SessionLoop loop(server, worker, *session);
    co_await loop.run(client_ip);
  } catch (const std::exception& e) {
    spdlog::debug("connection from {} ended: {}", client_ip, e.what());
  }
  error_code ec;
  session->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  session->stream.close();
  worker.sessions.erase(session);
  server.metrics.connectionClosed();
  server.sessionEnded();
  worker.scavenger.connectionEnded();
}

}  // namespace proxy::io
