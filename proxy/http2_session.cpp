// HTTP/2 connections (see the header): nghttp2 parses and writes frames; one coroutine
// reads the socket into it, one writes what it produces, and each stream's request is a
// coroutine of its own serving an Http2Stream.
#include "proxy/http2_session.h"

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// Go's http2.Server as kube-apiserver configures it (k8s.io/apiserver secure_serving.go):
// MaxUploadBufferPerStream and MaxReadFrameSize 256 KiB, the connection window that times
// the stream bound.
constexpr uint32_t kStreamWindow = 256 * 1024;
constexpr uint32_t kMaxFrameSize = 256 * 1024;
// Go's maxHeaderListSize: MaxHeaderBytes plus 32 bytes of overhead for 10 typical fields.
constexpr size_t kHeaderListSlack = 320;
// Frames gathered into one socket write.
constexpr size_t kWriteBatchBytes = 64 * 1024;
constexpr size_t kReadBytes = 64 * 1024;

class Http2Connection final : public Http2StreamOwner {
 public:
  Http2Connection(ServerContext& server, Worker& worker, Session& connection, std::string client_ip)
      : server_(server),
        worker_(worker),
        connection_(connection),
        client_ip_(std::move(client_ip)),
        executor_(connection.stream.get_executor()),
        wake_(executor_),
        streams_done_(executor_),
        idle_timer_(executor_),
        write_guard_(executor_) {}
  ~Http2Connection() override {
    *alive_ = false;
    if (h2_) nghttp2_session_del(h2_);
  }
  Http2Connection(const Http2Connection&) = delete;
  Http2Connection& operator=(const Http2Connection&) = delete;

  asio::awaitable<void> run();

  void submitResponse(int32_t id, unsigned status, const HeaderList& headers, bool has_body) override;
  void resumeData(int32_t id) override {
    nghttp2_session_resume_data(h2_, id);
    wakeWriter();
  }
  void consumed(int32_t id, size_t n) override {
    nghttp2_session_consume(h2_, id, n);
    wakeWriter();
  }
  void resetStream(int32_t id) override {
    nghttp2_submit_rst_stream(h2_, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
    wakeWriter();
  }

 private:
  bool start();
  asio::awaitable<void> readLoop();
  asio::awaitable<void> writeLoop();
  void wakeWriter() { wake_.cancel(); }
  // Graceful end (server stopping, or idle): GOAWAY naming the last stream served; the
  // streams in flight finish, then the connection closes.
  void goAway();
  void startRequest(const std::shared_ptr<Http2Stream>& stream);
  void armIdleTimer();
  Http2Stream* streamOf(int32_t id) {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
  }

  static int onBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int onHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t flags, void* self);
  static int onFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int onDataChunk(nghttp2_session*, uint8_t flags, int32_t id, const uint8_t* data, size_t len, void* self);
  static int onStreamClose(nghttp2_session*, int32_t id, uint32_t error_code, void* self);
  static ssize_t readBody(nghttp2_session*, int32_t id, uint8_t* buf, size_t length, uint32_t* data_flags,
                          nghttp2_data_source* source, void* self);

  ServerContext& server_;
  Worker& worker_;
  Session& connection_;
  const std::string client_ip_;
  asio::any_io_executor executor_;
  nghttp2_session* h2_ = nullptr;
  std::unordered_map<int32_t, std::shared_ptr<Http2Stream>> streams_;
  size_t running_ = 0;    // request coroutines not yet finished
  bool ended_ = false;    // the reader is done: the writer flushes and stops
  bool going_away_ = false;
  asio::steady_timer wake_;          // the writer waits on it; cancel() wakes it
  asio::steady_timer streams_done_;  // cancelled when the last request coroutine ends
  asio::steady_timer idle_timer_;
  asio::steady_timer write_guard_;
  // A timer's handler queued before the connection ended runs after it: it checks this.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

bool Http2Connection::start() {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return false;
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose);
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  // A request's DATA opens the window again only once the request code has taken it, so
  // a client cannot queue more than the window in the proxy while the upstream is slow.
  nghttp2_option_set_no_auto_window_update(option, 1);
  const int rv = nghttp2_session_server_new2(&h2_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) return false;
  const ServerOptions& options = server_.options;
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, options.http2_max_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, kMaxFrameSize},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<uint32_t>(std::min<uint64_t>(options.max_header_bytes + kHeaderListSlack, UINT32_MAX))},
  };
  nghttp2_submit_settings(h2_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  const uint64_t connection_window = static_cast<uint64_t>(kStreamWindow) * options.http2_max_streams;
  nghttp2_session_set_local_window_size(h2_, NGHTTP2_FLAG_NONE, 0,
                                        static_cast<int32_t>(std::min<uint64_t>(connection_window, INT32_MAX)));
  return true;
}

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
  // Every stream ends with the connection; their requests finish before it goes away.
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

asio::awaitable<void> Http2Connection::writeLoop() {
  DownstreamStream& stream = connection_.stream;
  std::string out;
  error_code ec;
  while (true) {
    out.clear();
    while (out.size() < kWriteBatchBytes) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(h2_, &data);
      if (n <= 0) break;
      out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (out.empty()) {
      if (ended_) break;
      if (!nghttp2_session_want_read(h2_) && !nghttp2_session_want_write(h2_)) {
        stream.cancel();  // GOAWAY sent and every stream done: the reader stops too
        break;
      }
      wake_.expires_at(std::chrono::steady_clock::time_point::max());
      co_await wake_.async_wait(redirect_error(use_awaitable, ec));
      continue;
    }
    // A client that stops reading the whole connection gets the write timeout, as a
    // connection of HTTP/1.1 would; one that stops reading a stream stalls only that one.
    write_guard_.expires_after(server_.options.write_timeout);
    write_guard_.async_wait([&stream, alive = alive_](const error_code& e) {
      if (!e && *alive) stream.cancel();
    });
    co_await asio::async_write(stream, asio::buffer(out), redirect_error(use_awaitable, ec));
    write_guard_.cancel();
    if (ec) {
      stream.cancel();
      break;
    }
  }
}

void Http2Connection::goAway() {
  if (going_away_ || !h2_) return;
  going_away_ = true;
  nghttp2_submit_goaway(h2_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(h2_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
  wakeWriter();
}

void Http2Connection::armIdleTimer() {
  // Go's http2.Server IdleTimeout (90 s in the apiserver): a connection without streams
  // for that long is told to go away.
  idle_timer_.expires_after(server_.options.idle_timeout);
  idle_timer_.async_wait([this, alive = alive_](const error_code& ec) {
    if (ec || !*alive) return;
    if (streams_.empty()) {
      server_.metrics.connectionTimedOut("idle");
      goAway();
    } else {
      armIdleTimer();
    }
  });
}

void Http2Connection::startRequest(const std::shared_ptr<Http2Stream>& stream) {
  auto session = std::make_shared<Session>(stream, connection_);
  ++running_;
  asio::co_spawn(executor_, serveHttp2Stream(server_, worker_, std::move(session), client_ip_),
                 [this](std::exception_ptr) {
                   if (--running_ == 0) streams_done_.cancel();
                 });
}

void Http2Connection::submitResponse(int32_t id, unsigned status, const HeaderList& headers, bool has_body) {
  const std::string code = std::to_string(status);
  std::vector<nghttp2_nv> nva;
  nva.reserve(headers.size() + 1);
  auto nv = [](const std::string& name, const std::string& value) {
    return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                      NGHTTP2_NV_FLAG_NONE};
  };
  static const std::string kStatus = ":status";
  nva.push_back(nv(kStatus, code));
  for (const auto& [name, value] : headers) nva.push_back(nv(name, value));
  nghttp2_data_provider provider{};
  provider.source.ptr = streamOf(id);
  provider.read_callback = readBody;
  nghttp2_submit_response(h2_, id, nva.data(), nva.size(), has_body ? &provider : nullptr);
  wakeWriter();
}

int Http2Connection::onBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto& c = *static_cast<Http2Connection*>(self);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  const int32_t id = frame->hd.stream_id;
  c.streams_[id] = std::make_shared<Http2Stream>(c.executor_, &c, id);
  c.idle_timer_.cancel();
  return 0;
}

int Http2Connection::onHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                              const uint8_t* value, size_t valuelen, uint8_t, void* self) {
  auto& c = *static_cast<Http2Connection*>(self);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;  // trailers
  Http2Stream* stream = c.streamOf(frame->hd.stream_id);
  if (!stream) return 0;
  // A head beyond the limit still reaches the request code, which answers 431 as the
  // apiserver does; far beyond it the stream is reset rather than buffered.
  if (stream->requestHeadBytes() > 2 * (c.server_.options.max_header_bytes + kHeaderListSlack)) {
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  stream->addRequestHeader(std::string_view(reinterpret_cast<const char*>(name), namelen),
                           std::string_view(reinterpret_cast<const char*>(value), valuelen));
  return 0;
}

int Http2Connection::onFrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* self) {
  auto& c = *static_cast<Http2Connection*>(self);
  const int32_t id = frame->hd.stream_id;
  Http2Stream* stream = c.streamOf(id);
  if (!stream) return 0;
  const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    if (!stream->requestHeadersDone(end_stream)) {
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, NGHTTP2_PROTOCOL_ERROR);
      return 0;
    }
    c.startRequest(c.streams_[id]);
  } else if ((frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) && end_stream) {
    stream->requestEnded();
  }
  return 0;
}

int Http2Connection::onDataChunk(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len, void* self) {
  auto& c = *static_cast<Http2Connection*>(self);
  if (Http2Stream* stream = c.streamOf(id)) stream->addRequestData(data, len);
  return 0;
}

int Http2Connection::onStreamClose(nghttp2_session* session, int32_t id, uint32_t, void* self) {
  auto& c = *static_cast<Http2Connection*>(self);
  auto it = c.streams_.find(id);
  if (it == c.streams_.end()) return 0;
  // DATA the request code never took still counts against the connection's window.
  if (const size_t unread = it->second->unconsumedPayload(); unread > 0) {
    nghttp2_session_consume_connection(session, unread);
  }
  it->second->closed();
  c.streams_.erase(it);
  if (c.streams_.empty() && !c.going_away_) c.armIdleTimer();
  return 0;
}

ssize_t Http2Connection::readBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* data_flags,
                                  nghttp2_data_source* source, void*) {
  auto* stream = static_cast<Http2Stream*>(source->ptr);
  if (!stream) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  bool eof = false;
  const std::optional<size_t> n = stream->readBody(buf, length, eof);
  if (!n) return NGHTTP2_ERR_DEFERRED;
  if (eof) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(*n);
}

}  // namespace

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
