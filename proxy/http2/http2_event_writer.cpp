#include "proxy/http2/http2_event_writer.h"

#include <algorithm>

#include "proxy/http/gzip_writer.h"
#include "proxy/http2/http2_stream.h"

namespace proxy::io {

void Http2EventWriter::add(watch::FrameConstSharedPtr frame) {
  bytes_ += frame->size();
  pending_.push_back(std::move(frame));
}

void Http2EventWriter::seal() {
  if (sealed_ == pending_.size()) return;
  const auto first = pending_.begin() + static_cast<std::ptrdiff_t>(sealed_);
  auto member = std::make_shared<const std::string>(gzipFlushedMember(std::span(first, pending_.end())));
  pending_.erase(first, pending_.end());
  pending_.push_back(std::move(member));
  sealed_ = pending_.size();
  bytes_ = 0;
  for (const auto& frame : pending_) bytes_ += frame->size();
}

bool Http2EventWriter::trySend(error_code& ec) {
  ec = stream_.failure();
  if (ec) return false;
  if (pending_.empty()) return true;
  if (gzip_) seal();
  const size_t moved = stream_.queueEvents(pending_);
  if (moved == 0) return false;
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(moved));
  sealed_ -= std::min(sealed_, moved);
  bytes_ = 0;
  for (const auto& frame : pending_) bytes_ += frame->size();
  return pending_.empty();
}

asio::awaitable<void> Http2EventWriter::flush() {
  while (true) {
    error_code ec;
    if (trySend(ec)) co_return;
    if (ec) throw boost::system::system_error(ec);
    co_await stream_.awaitRoom(pending_.front()->size());
  }
}

asio::awaitable<void> Http2EventWriter::end() {
  co_await flush();
  co_await stream_.endBody();
}

void Http2EventWriter::cancel() { stream_.cancelWait(); }

}  // namespace proxy::io
