// Http2Stream: one HTTP/2 stream's request and answer (see the header).
#include "proxy/http2/http2_stream.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include <boost/asio/post.hpp>

#include "proxy/http/client_watch.h"
#include "proxy/http2/http2_event_writer.h"
#include "proxy/observability/proxy_metrics.h"
#include "proxy/server/server_context.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

std::optional<uint64_t> parseLength(std::string_view value) {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty()) return std::nullopt;
  return n;
}

}  // namespace

Http2Stream::Http2Stream(asio::any_io_executor executor, Http2StreamOwner& owner, int32_t id,
                         std::shared_ptr<Session> session, Http2Timeouts timeouts, size_t max_header_list_bytes)
    : executor_(executor),
      owner_(owner),
      id_(id),
      session_(std::move(session)),
      timeouts_(timeouts),
      head_(max_header_list_bytes),
      wake_(executor) {}

Http2Stream::~Http2Stream() = default;

SessionControl& Http2Stream::control() { return session_->control; }

bool Http2Stream::start(std::string client_ip, bool end_stream) {
  started_ = true;
  request_ended_ = end_stream;
  if (head_.tooLarge()) return true;  // answered 431 without a Request
  request_ = head_.take(std::move(client_ip));
  if (!request_) return false;
  head_request_ = request_->isHead();
  if (auto length = findHeader(request_->headers, "content-length"); !length.empty()) request_length_ = parseLength(length);
  return true;
}

void Http2Stream::addRequestData(const uint8_t* data, size_t n) {
  if (n == 0) return;
  if (body_refused_ || closed_) {
    owner_.consumed(id_, n);  // not read: the window opens at once
    return;
  }
  unconsumed_ += n;
  inbound_.append(reinterpret_cast<const char*>(data), n);
  notify();
}

void Http2Stream::requestEnded() {
  request_ended_ = true;
  notify();
}

ssize_t Http2Stream::nextData(size_t max, uint32_t* flags) {
  if (reset_ || closed_) return NGHTTP2_ERR_DEFERRED;  // the reset goes out first, then the stream is gone
  const size_t n = std::min(max, queue_.bytes());
  if (n == 0 && !body_ended_) {
    deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (body_ended_ && n == queue_.bytes()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

uint64_t Http2Stream::takeData(size_t n, WriteBatch& batch) {
  queue_.takeInto(n, batch);
  notify();
  return queue_.taken();
}

void Http2Stream::sent(uint64_t mark) {
  if (mark <= sent_) return;
  sent_ = mark;
  notify();
}

void Http2Stream::closed() {
  if (closed_) return;
  closed_ = true;
  queue_.clear();
  if (client_watch_ && !answer_sent_) postClientGone();
  notify();
}

void Http2Stream::finish() {
  // Nothing answered (the server stopped meanwhile), or a body left short: the client
  // learns it from a reset, as from a closed HTTP/1.1 connection.
  if (!head_sent_ || !body_ended_) fail(kInternalError);
  client_watch_.reset();
  on_gone_ = nullptr;
  request_.reset();  // its fields' references on nghttp2's buffers go now
}

asio::awaitable<size_t> Http2Stream::readRequestBody(char* out, size_t max) {
  co_await waitFor(Wait::RequestData, 0);
  const size_t n = std::min(max, inbound_.size() - inbound_offset_);
  if (n == 0) co_return 0;
  std::memcpy(out, inbound_.data() + inbound_offset_, n);
  inbound_offset_ += n;
  if (inbound_offset_ == inbound_.size()) {
    std::string().swap(inbound_);  // at most a window's worth, given back between bursts
    inbound_offset_ = 0;
  }
  unconsumed_ -= n;
  owner_.consumed(id_, n);
  co_return n;
}

asio::awaitable<void> Http2Stream::refuseRequestBody() {
  // Nothing more is read: what came and what comes opens the window at once. Once the
  // answer's END_STREAM is out, the connection resets the stream with NO_ERROR, as Go's
  // server does for a body left unread (RFC 9113 8.1).
  body_refused_ = true;
  if (unconsumed_ > 0 && !closed_) owner_.consumed(id_, unconsumed_);
  unconsumed_ = 0;
  std::string().swap(inbound_);
  inbound_offset_ = 0;
  co_return;
}

asio::awaitable<void> Http2Stream::writeHead(ResponseHead head) {
  throwIfFailed();
  if (head.status < 200) {
    // An interim or upgrade answer (101 for exec, attach, port-forward) has no HTTP/2
    // form here: those clients ask on HTTP/1.1 connections.
    fail(kInternalError);
    throwIfFailed();
  }
  head_sent_ = true;
  body_allowed_ = head.body && !head_request_;
  if (body_allowed_ && head.content_length) body_left_ = *head.content_length;
  body_ended_ = !body_allowed_ || body_left_ == uint64_t{0};
  owner_.submitHead(id_, head, body_ended_);
  co_return;
}

asio::awaitable<void> Http2Stream::writeWhole(ResponseHead head, std::string_view body) {
  head.content_length = body.size();
  co_await writeHead(std::move(head));
  if (!body_ended_) co_await writeBody(std::span(&body, 1));
}

asio::awaitable<void> Http2Stream::writeBody(std::span<const std::string_view> pieces) {
  throwIfFailed();
  if (body_ended_) co_return;  // HEAD, a body-less status, or a sized body already whole
  size_t whole = 0;
  for (std::string_view p : pieces) whole += p.size();
  size_t total = whole;
  if (body_left_) total = std::min<uint64_t>(total, *body_left_);  // never more than announced
  if (total == 0) co_return;
  co_await waitFor(Wait::Room, 1);
  if (queue_.bytes() < kSendBufferBytes && total <= kSendBufferBytes - queue_.bytes()) {
    // Small: copied, and the writer goes on at once (a whole answer ends here).
    std::string copy;
    copy.reserve(total);
    for (std::string_view p : pieces) copy.append(p.substr(0, total - copy.size()));
    queue_.push(watch::makeFrame(std::move(copy)));
    queued(total);
    co_return;
  }
  // Large (a list's stored objects): queued where they lie, and the write returns once
  // the socket writes that took them have ended (plain TCP: sendmsg reads them in place)
  // or copied them (TLS).
  if (total == whole) {
    queue_.pushBorrowed(pieces, total);
  } else {  // cut to what was announced
    size_t left = total;
    for (std::string_view p : pieces) {
      queue_.pushBorrowed(p.substr(0, left));
      left -= std::min(left, p.size());
    }
  }
  const uint64_t end = queue_.pushed();
  queued(total);
  owner_.writeNow();  // a socket that takes it all ends the wait below before it starts
  std::exception_ptr failure;
  try {
    co_await waitFor(Wait::Sent, end);
  } catch (...) {
    failure = std::current_exception();  // co_await is not allowed inside a handler
  }
  if (failure) {
    fail(kInternalError);  // what was not taken leaves the queue
    co_await releaseBorrowed();
    std::rethrow_exception(failure);
  }
}

asio::awaitable<void> Http2Stream::releaseBorrowed() {
  // Bounded by the connection's write guard, which ends a write that stalls; the
  // connection completes every batch it took, written or not.
  while (sent_ < queue_.taken()) {
    wake_.expires_at(asio::steady_timer::time_point::max());
    waiting_ = true;
    error_code ec;
    co_await wake_.async_wait(redirect_error(use_awaitable, ec));
    waiting_ = false;
  }
}

asio::awaitable<void> Http2Stream::endBody() {
  if (body_ended_ && answer_sent_) co_return;  // all of it is out; its stream may have closed since
  throwIfFailed();
  if (body_ended_ || body_left_) co_return;  // a sized body ends with its last byte
  body_ended_ = true;
  queued(0);
}

asio::awaitable<std::unique_ptr<EventWriter>> Http2Stream::startEvents(ResponseHead head,
                                                                       EventStreamOptions options) {
  head.content_length.reset();
  co_await writeHead(std::move(head));
  co_return std::make_unique<Http2EventWriter>(*this, options.gzip);
}

std::shared_ptr<ClientWatch> Http2Stream::watchClient(std::function<void()> on_gone) {
  client_watch_ = std::make_shared<ClientWatch>();
  on_gone_ = std::move(on_gone);
  if (closed_ && !answer_sent_) postClientGone();
  return client_watch_;
}

asio::awaitable<void> Http2Stream::endClientWatch(ClientWatch& watch) {
  watch.finished = true;
  if (client_watch_.get() == &watch) {
    client_watch_.reset();
    on_gone_ = nullptr;
  }
  co_return;
}

void Http2Stream::postClientGone() {
  client_watch_->gone = true;
  // Run after nghttp2's callback returns, and not once the watch has ended.
  asio::post(executor_, [watch = client_watch_, on_gone = on_gone_] {
    if (!watch->finished && on_gone) on_gone();
  });
}

size_t Http2Stream::queueEvents(std::vector<WirePiece>& pieces) {
  if (failure() || body_ended_) return 0;
  size_t moved = 0;
  size_t bytes = 0;
  for (; moved < pieces.size(); ++moved) {
    const size_t size = pieces[moved].bytes.size();
    if (!queue_.empty() && queue_.bytes() + size > kSendBufferBytes) break;
    queue_.push(std::move(pieces[moved].owner), pieces[moved].bytes);
    bytes += size;
  }
  if (moved > 0) queued(bytes);
  return moved;
}

asio::awaitable<void> Http2Stream::awaitRoom(size_t bytes) { co_await waitFor(Wait::Room, bytes); }

void Http2Stream::cancelWait() {
  // As the HTTP/1.1 writer's socket cancel: only an operation in progress fails; a watch
  // closed for being slow still ends its stream cleanly if it gets that far.
  if (!waiting_) return;
  cancel_requested_ = true;
  notify();
}

error_code Http2Stream::failure() const {
  if (closed_) return asio::error::connection_reset;
  if (reset_) return asio::error::broken_pipe;
  return {};
}

bool Http2Stream::ready(Wait what, uint64_t mark) const {
  switch (what) {
    case Wait::Room:  // for `mark` more bytes
      return queue_.empty() || queue_.bytes() + mark <= kSendBufferBytes;
    case Wait::Sent:
      return sent_ >= mark;
    case Wait::RequestData:
      return inbound_.size() > inbound_offset_ || request_ended_ || body_refused_;
  }
  return true;
}

asio::awaitable<void> Http2Stream::waitFor(Wait what, uint64_t mark) {
  const auto deadline =
      asio::steady_timer::clock_type::now() + (what == Wait::RequestData ? timeouts_.idle : timeouts_.write);
  while (true) {
    // Bytes the socket took stay sent: the END_STREAM of an answer's last frame closes
    // its stream as it goes out, and that write did not fail (the request is counted as
    // answered, not as a client gone).
    if (what == Wait::Sent && ready(what, mark)) co_return;
    throwIfFailed();
    if (ready(what, mark)) co_return;
    wake_.expires_at(deadline);
    waiting_ = true;
    error_code ec;
    co_await wake_.async_wait(redirect_error(use_awaitable, ec));
    waiting_ = false;
    if (!ec && !failure() && !cancel_requested_ && !ready(what, mark)) {
      // A client that keeps its window closed (or stops sending its body) this long is
      // gone for this stream, as a TCP write or read times out.
      fail(kInternalError);
      throw boost::system::system_error(beast::error::timeout);
    }
  }
}

void Http2Stream::throwIfFailed() {
  if (const error_code ec = failure()) throw boost::system::system_error(ec);
  if (cancel_requested_) {
    cancel_requested_ = false;
    throw boost::system::system_error(asio::error::operation_aborted);
  }
}

void Http2Stream::notify() {
  if (waiting_) wake_.cancel();
}

void Http2Stream::fail(uint32_t error_code) {
  if (!closed_ && !reset_) {
    reset_ = true;
    owner_.resetStream(id_, error_code);
  }
  queue_.clear();
  notify();
}

void Http2Stream::queued(size_t n) {
  if (client_ && n > 0) client_->bytesSent(n);
  if (body_left_) {
    *body_left_ -= std::min<uint64_t>(n, *body_left_);
    if (*body_left_ == 0) body_ended_ = true;
  }
  if (deferred_) {
    deferred_ = false;
    owner_.resumeData(id_);
  }
}

}  // namespace proxy::io
