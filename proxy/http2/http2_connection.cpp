// Http2Connection's nghttp2 side (see http2_connection.h): settings, callbacks, and the
// answer's HEADERS and DATA.
#include "proxy/http2/http2_connection.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "proxy/http2/http2_fields.h"

namespace proxy::io {

bool Http2Connection::start() {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return false;
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback2(callbacks, onHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameRecv);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, onFrameSend);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose);
  nghttp2_session_callbacks_set_send_data_callback(callbacks, sendData);
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  // A request's DATA opens the window again only once the request code has taken it, so
  // a client cannot queue more than the window in the proxy while the upstream is slow.
  nghttp2_option_set_no_auto_window_update(option, 1);
  applyHttp2Options(option, limits_);
  const int rv = nghttp2_session_server_new2(&h2_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) return false;
  const ServerOptions& options = server_.options;
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, options.http2_max_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, kMaxFrameSize},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(limits_.max_header_list_bytes)},
  };
  nghttp2_submit_settings(h2_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  const uint64_t connection_window = static_cast<uint64_t>(kStreamWindow) * options.http2_max_streams;
  nghttp2_session_set_local_window_size(h2_, NGHTTP2_FLAG_NONE, 0,
                                        static_cast<int32_t>(std::min<uint64_t>(connection_window, INT32_MAX)));
  return true;
}

void Http2Connection::submitHead(int32_t id, const ResponseHead& head, bool end_stream) {
  const HeaderList fields = responseFields(head.status, head.headers, head.content_length);
  std::vector<nghttp2_nv> nva;
  nva.reserve(fields.size());
  for (const auto& [name, value] : fields) {
    nva.push_back(nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                             reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                             NGHTTP2_NV_FLAG_NONE});
  }
  nghttp2_data_provider provider{};
  provider.source.ptr = streamOf(id);
  provider.read_callback = readData;
  nghttp2_submit_response(h2_, id, nva.data(), nva.size(), end_stream ? nullptr : &provider);
  wakeWriter();
}

int Http2Connection::onBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto& c = *static_cast<Http2Connection*>(self);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  const int32_t id = frame->hd.stream_id;
  auto session = std::make_shared<Session>(Session::Http2StreamOf{c.connection_});
  const Http2Timeouts timeouts{c.server_.options.write_timeout, c.server_.options.idle_timeout};
  c.streams_[id] =
      std::make_shared<Http2Stream>(c.executor_, c, id, std::move(session), timeouts, c.limits_.max_header_list_bytes);
  // Not yet a running stream for the idle timer: a block that never ends leaves the
  // connection idle, and the read-header timeout bounds it even beside running streams.
  c.armHeaderTimer(id);
  return 0;
}

int Http2Connection::onHeader(nghttp2_session*, const nghttp2_frame* frame, nghttp2_rcbuf* name,
                              nghttp2_rcbuf* value, uint8_t, void* self) {
  auto& c = *static_cast<Http2Connection*>(self);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;  // trailers
  if (Http2Stream* stream = c.streamOf(frame->hd.stream_id)) stream->requestHead().add(name, value);
  return 0;
}

int Http2Connection::onFrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* self) {
  auto& c = *static_cast<Http2Connection*>(self);
  const int32_t id = frame->hd.stream_id;
  // Rapid reset (CVE-2023-44487): past the budget the connection ends with Go's code.
  if (frame->hd.type == NGHTTP2_RST_STREAM && !c.resets_.spend(std::chrono::steady_clock::now())) {
    spdlog::info("HTTP/2 connection from {}: more RST_STREAM than {} at once and {}/s, closing it", c.client_ip_,
                 c.limits_.reset_burst, c.limits_.reset_rate);
    c.terminate(NGHTTP2_ENHANCE_YOUR_CALM);
    return 0;
  }
  Http2Stream* stream = c.streamOf(id);
  if (!stream) return 0;
  const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    c.header_timer_.cancel();
    if (!stream->start(c.client_ip_, end_stream)) {
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, NGHTTP2_PROTOCOL_ERROR);
      return 0;
    }
    if (!c.scheduleRequest(c.streams_[id])) {
      spdlog::info("HTTP/2 connection from {}: more than {} requests wait for {} running handlers, closing it",
                   c.client_ip_, c.limits_.max_waiting_handlers, c.limits_.max_streams);
      c.terminate(NGHTTP2_ENHANCE_YOUR_CALM);
    }
  } else if ((frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) && end_stream) {
    stream->requestEnded();
  }
  return 0;
}

int Http2Connection::onFrameSend(nghttp2_session* session, const nghttp2_frame* frame, void* self) {
  auto& c = *static_cast<Http2Connection*>(self);
  const bool answer = frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS;
  if (!answer || (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
  Http2Stream* stream = c.streamOf(frame->hd.stream_id);
  if (!stream) return 0;
  stream->answerSent();
  // The answer is complete and the request body is not: as Go's server, a reset with
  // NO_ERROR tells the client to stop sending it (RFC 9113 8.1).
  if (!stream->requestDone()) {
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
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
  if (!c.anyStarted() && !c.going_away_) c.armIdleTimer();
  return 0;
}

ssize_t Http2Connection::readData(nghttp2_session*, int32_t, uint8_t*, size_t length, uint32_t* data_flags,
                                  nghttp2_data_source* source, void*) {
  auto* stream = static_cast<Http2Stream*>(source->ptr);
  if (!stream) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  return stream->nextData(length, data_flags);
}

int Http2Connection::sendData(nghttp2_session*, nghttp2_frame* frame, const uint8_t* framehd, size_t length,
                              nghttp2_data_source* source, void* self) {
  auto& c = *static_cast<Http2Connection*>(self);
  if (frame->data.padlen > 0) return NGHTTP2_ERR_CALLBACK_FAILURE;  // never asked for (no padding callback)
  c.batch_.copy(std::string_view(reinterpret_cast<const char*>(framehd), 9));
  const uint64_t mark = static_cast<Http2Stream*>(source->ptr)->takeData(length, c.batch_);
  if (!c.taken_.empty() && c.taken_.back().first->id() == frame->hd.stream_id) {
    c.taken_.back().second = mark;
  } else if (auto it = c.streams_.find(frame->hd.stream_id); it != c.streams_.end()) {
    c.taken_.emplace_back(it->second, mark);
  }
  const size_t limit = c.batch_.copying() ? kCopiedBatchBytes : kGatheredBatchBytes;
  return c.batch_.bytes() >= limit ? NGHTTP2_ERR_PAUSE : 0;
}

}  // namespace proxy::io
