// HTTP/2 connections (see the header): Http2Connection's socket side and the streams'
// request coroutines (http2_connection.h); the preface and ALPN checks that choose HTTP/2.
#include "proxy/http2/http2_session.h"

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cstring>

#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "proxy/http2/http2_connection.h"
#include "proxy/server/request_handler.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// One TLS record's worth, which is what a read from TLS returns at most: a connection
// holds it for its whole life.
constexpr size_t kReadBytes = 16 * 1024;
// Go's http2 server answer to a header list over the limit (handleHeaderListTooLong), its
// content type as Go's sniffing names it.
constexpr std::string_view kHeaderListTooLong = "<h1>HTTP Error 431</h1><p>Request Header Field(s) Too Large</p>";

}  // namespace

asio::awaitable<void> Http2Connection::run() {
  if (!start()) co_return;
  // The connection's state for shutdown (ProxyServer::stop): neither idle nor new; an
  // interrupt sends GOAWAY, and each stream's own session is interrupted on its own.
  connection_.idle = false;
  connection_.awaiting_first_request = false;
  connection_.control.streaming = true;
  connection_.control.interrupt = [this] { goAway(); };
  if (connection_.control.stopping || server_.stopping) goAway();
  armIdleTimer();
  bool writer_done = false;
  auto writer_finished = std::make_shared<asio::steady_timer>(executor_, std::chrono::steady_clock::time_point::max());
  asio::co_spawn(executor_, writeLoop(), [&writer_done, writer_finished](std::exception_ptr) {
    writer_done = true;
    writer_finished->cancel();
  });
  try {
    co_await readLoop();
  } catch (const std::exception& e) {
    spdlog::debug("HTTP/2 connection from {}: {}", client_ip_, e.what());
  }
  // Every stream ends with the connection; their requests finish before it goes away,
  // and those still waiting for a handler never start.
  accepting_ = false;
  waiting_.clear();
  for (auto& [id, stream] : streams_) stream->closed();
  error_code ec;
  while (running_ > 0) {
    streams_done_.expires_at(std::chrono::steady_clock::time_point::max());
    co_await streams_done_.async_wait(redirect_error(use_awaitable, ec));
  }
  ended_ = true;
  wakeWriter();
  if (!writer_done) co_await writer_finished->async_wait(redirect_error(use_awaitable, ec));
  idle_timer_.cancel();
  header_timer_.cancel();
  connection_.control.interrupt = nullptr;
  connection_.control.streaming = false;
}

asio::awaitable<void> Http2Connection::readLoop() {
  DownstreamStream& stream = connection_.stream;
  // Bytes read before HTTP/2 was known (the h2c preface) come first.
  if (const size_t n = connection_.buffer.size(); n > 0) {
    const auto* data = static_cast<const uint8_t*>(connection_.buffer.data().data());
    const ssize_t used = nghttp2_session_mem_recv(h2_, data, n);
    connection_.buffer.consume(n);
    if (used < 0) co_return;
    wakeWriter();
  }
  std::vector<uint8_t> buffer(kReadBytes);
  while (nghttp2_session_want_read(h2_) || nghttp2_session_want_write(h2_)) {
    error_code ec;
    // Untimed: idleness is the idle timer's, a stalled write the write guard's.
    const size_t n = co_await stream.async_read_some_untimed(asio::buffer(buffer), redirect_error(use_awaitable, ec));
    if (ec) co_return;
    const ssize_t used = nghttp2_session_mem_recv(h2_, buffer.data(), n);
    wakeWriter();
    if (used < 0) {
      // A protocol error: nghttp2 has queued GOAWAY; the writer sends it and stops.
      spdlog::debug("HTTP/2 connection from {}: {}", client_ip_, nghttp2_strerror(static_cast<int>(used)));
      co_return;
    }
  }
}

bool Http2Connection::gatherFrames() {
  const size_t limit = batch_.copying() ? kCopiedBatchBytes : kGatheredBatchBytes;
  while (batch_.bytes() < limit) {
    const uint8_t* data = nullptr;
    // DATA frames are added by sendData from inside this call; it pauses the call once
    // the batch is full.
    const ssize_t n = nghttp2_session_mem_send(h2_, &data);
    if (n < 0) {
      spdlog::debug("HTTP/2 connection from {}: {}", client_ip_, nghttp2_strerror(static_cast<int>(n)));
      return false;
    }
    if (n == 0) break;
    batch_.copy(std::string_view(reinterpret_cast<const char*>(data), static_cast<size_t>(n)));
  }
  return true;
}

void Http2Connection::completeBatch() {
  for (auto& [stream, mark] : taken_) stream->sent(mark);
  taken_.clear();
}

asio::awaitable<void> Http2Connection::writeLoop() {
  error_code ec;
  while (!ec) {
    if (!gatherFrames()) {
      ec = asio::error::fault;
      break;
    }
    if (batch_.copying()) completeBatch();  // the payloads are copied: their writers may go on
    if (batch_.empty()) {
      if (ended_) break;
      if (!nghttp2_session_want_read(h2_) && !nghttp2_session_want_write(h2_)) {
        connection_.stream.cancel();  // GOAWAY sent and every stream done: the reader stops too
        break;
      }
      wake_.expires_at(std::chrono::steady_clock::time_point::max());
      writer_idle_ = true;
      co_await wake_.async_wait(redirect_error(use_awaitable, ec));
      writer_idle_ = false;
      ec = {};
      continue;
    }
    co_await writeBatch(ec);
    batch_.clear();
    completeBatch();
  }
  batch_.clear();
  completeBatch();
  if (ec) connection_.stream.cancel();
}

void Http2Connection::writeNow() {
  // Not over TLS (its bytes go through the asynchronous encryption), and not while the
  // writer holds a batch: bytes must leave in the order nghttp2 framed them.
  if (batch_.copying() || !writer_idle_ || ended_ || !batch_.empty()) return;
  while (true) {
    if (!gatherFrames()) return wakeWriter();  // the writer meets the failure and ends
    if (batch_.empty()) return;
    error_code ec;
    if (!batch_.sendWhileTaken(connection_.stream.directDescriptor(), ec) || ec) {
      return wakeWriter();  // a full socket, or a gone client: the writer's
    }
    batch_.clear();
    completeBatch();
  }
}

asio::awaitable<void> Http2Connection::writeBatch(error_code& ec) {
  DownstreamStream& stream = connection_.stream;
  // Plain TCP: sendmsg as long as the socket takes bytes, which a client that keeps up
  // leaves it doing; the event loop only for a full send buffer.
  if (!batch_.copying() && (batch_.sendWhileTaken(stream.directDescriptor(), ec) || ec)) co_return;
  // A client that stops reading the whole connection gets the write timeout, as a
  // connection of HTTP/1.1 would; one that stops reading a stream stalls only that one.
  write_guard_.expires_after(server_.options.write_timeout);
  write_guard_.async_wait([&stream, alive = alive_](const error_code& e) {
    if (!e && *alive) stream.cancel();
  });
  if (batch_.copying()) {
    co_await asio::async_write(stream, asio::buffer(batch_.contiguous()), redirect_error(use_awaitable, ec));
  } else {
    while (!batch_.empty() && !ec) {
      co_await stream.socket().async_wait(asio::socket_base::wait_write, redirect_error(use_awaitable, ec));
      if (!ec) batch_.sendWhileTaken(stream.directDescriptor(), ec);
    }
  }
  write_guard_.cancel();
}

void Http2Connection::goAway() {
  if (going_away_ || !h2_) return;
  going_away_ = true;
  nghttp2_submit_goaway(h2_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(h2_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
  wakeWriter();
}

void Http2Connection::terminate(uint32_t error_code) {
  going_away_ = true;
  terminated_ = true;
  nghttp2_session_terminate_session(h2_, error_code);
  wakeWriter();
}

bool Http2Connection::anyStarted() const {
  return std::any_of(streams_.begin(), streams_.end(), [](const auto& s) { return s.second->started(); });
}

void Http2Connection::armIdleTimer() {
  // Go's http2.Server IdleTimeout (90 s in the apiserver): a connection without a running
  // stream for that long is told to go away. A header block that never ends opens no
  // stream in Go, so such a connection is idle too: it is closed at once, as Go closes
  // it after its GOAWAY.
  idle_timer_.expires_after(limits_.idle);
  idle_timer_.async_wait([this, alive = alive_](const error_code& ec) {
    if (ec || !*alive) return;
    if (anyStarted()) return armIdleTimer();
    server_.metrics.connectionTimedOut("idle");
    if (streams_.empty()) {
      goAway();
    } else {
      terminate(NGHTTP2_NO_ERROR);
    }
  });
}

void Http2Connection::armHeaderTimer(int32_t id) {
  // Only one header block is open at a time (CONTINUATION frames follow their HEADERS
  // directly, RFC 9113 6.10); the request's start cancels the timer.
  header_timer_.expires_after(limits_.read_header);
  header_timer_.async_wait([this, id, alive = alive_](const error_code& ec) {
    if (ec || !*alive) return;
    const Http2Stream* stream = streamOf(id);
    if (!stream || stream->started()) return;
    server_.metrics.connectionTimedOut("read-header");
    terminate(NGHTTP2_NO_ERROR);
  });
}

bool Http2Connection::scheduleRequest(const std::shared_ptr<Http2Stream>& stream) {
  if (!accepting_ || terminated_) return true;  // the connection is ending: no new handler
  // Go's scheduleHandler (CVE-2023-39325): the handlers counted, not the open streams,
  // since a reset stream's handler runs on until it sees the reset.
  if (running_ < limits_.max_streams) {
    startRequest(stream);
    return true;
  }
  if (waiting_.size() > limits_.max_waiting_handlers) return false;
  waiting_.push_back(stream);
  return true;
}

void Http2Connection::handlerDone() {
  --running_;
  while (accepting_ && !waiting_.empty() && running_ < limits_.max_streams) {
    std::shared_ptr<Http2Stream> next = std::move(waiting_.front());
    waiting_.pop_front();
    if (!next->over()) startRequest(next);  // a stream reset while it waited never starts
  }
  if (running_ == 0) streams_done_.cancel();
}

void Http2Connection::startRequest(const std::shared_ptr<Http2Stream>& stream) {
  ++running_;
  asio::co_spawn(executor_, serveStream(stream, server_.clock.now()), [this](std::exception_ptr) { handlerDone(); });
}

asio::awaitable<void> Http2Connection::serveStream(std::shared_ptr<Http2Stream> stream,
                                                   std::chrono::steady_clock::time_point arrived) {
  // Registered like a connection, so that shutdown interrupts its watch the same way.
  const SessionPtr session = stream->session();
  worker_.sessions.insert(session);
  server_.metrics.http2StreamOpened();
  try {
    if (stream->over()) {
      // Reset before its handler ran: nothing to do, and no upstream request to start.
    } else if (stream->requestHead().tooLarge()) {
      ResponseHead head{431, "", {{"Content-Type", "text/html; charset=utf-8"}}, std::nullopt, true};
      co_await stream->writeWhole(std::move(head), kHeaderListTooLong);
    } else if (!session->control.stopping && !server_.stopping) {
      co_await handleRequest(server_, worker_, *session, stream->request(), *stream, arrived);
    }
  } catch (const std::exception& e) {
    spdlog::debug("HTTP/2 stream from {} ended: {}", client_ip_, e.what());
  }
  stream->finish();
  worker_.sessions.erase(session);
}

bool negotiatedHttp2(DownstreamStream& stream) {
  TlsStream* tls = stream.tls();
  if (!tls) return false;
  const unsigned char* protocol = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(tls->native_handle(), &protocol, &length);
  return length == 2 && std::memcmp(protocol, "h2", 2) == 0;
}

asio::awaitable<Http2Preface> readHttp2Preface(DownstreamStream& stream, beast::flat_buffer& buffer,
                                               std::chrono::milliseconds timeout) {
  error_code ec;
  while (true) {
    const std::string_view have(static_cast<const char*>(buffer.data().data()), buffer.size());
    const size_t n = std::min(have.size(), kPreface.size());
    if (have.substr(0, n) != kPreface.substr(0, n)) co_return Http2Preface::Absent;
    if (n == kPreface.size()) co_return Http2Preface::Present;
    stream.expires_after(timeout);
    const size_t got = co_await stream.async_read_some(buffer.prepare(kPreface.size() - n), redirect_error(use_awaitable, ec));
    stream.expires_never();
    buffer.commit(got);
    if (ec == beast::error::timeout) co_return Http2Preface::TimedOut;
    // The client left before its first request. (Reading the stream again after this
    // end was seen to never complete: sessions stayed in CLOSE-WAIT.)
    if (ec) co_return Http2Preface::Closed;
  }
}

asio::awaitable<void> serveHttp2(ServerContext& server, Worker& worker, Session& connection,
                                 const std::string& client_ip) {
  Http2Connection h2(server, worker, connection, client_ip);
  co_await h2.run();
}

}  // namespace proxy::io
