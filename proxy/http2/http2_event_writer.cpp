#include "proxy/http2/http2_event_writer.h"

#include "proxy/http2/http2_stream.h"

namespace proxy::io {

void Http2EventWriter::add(watch::FrameConstSharedPtr frame) {
  bytes_ += frame->size();
  if (gzip_) {
    unsealed_.push_back(std::move(frame));
    return;
  }
  const std::string_view bytes = frame->bytes();
  pending_.push_back(WirePiece{std::move(frame), bytes});
}

bool Http2EventWriter::trySend(error_code& ec) {
  ec = stream_.failure();
  if (ec) return false;
  if (!unsealed_.empty()) {
    appendGzipPieces(unsealed_, pending_);
    unsealed_.clear();
  }
  if (pending_.empty()) return true;
  const size_t moved = stream_.queueEvents(pending_);
  if (moved == 0) return false;
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(moved));
  bytes_ = 0;
  for (const auto& piece : pending_) bytes_ += piece.bytes.size();
  return pending_.empty();
}

asio::awaitable<void> Http2EventWriter::flush() {
  while (true) {
    error_code ec;
    if (trySend(ec)) co_return;
    if (ec) throw boost::system::system_error(ec);
    co_await stream_.awaitRoom(pending_.front().bytes.size());
  }
}

asio::awaitable<void> Http2EventWriter::end() {
  co_await flush();
  co_await stream_.endBody();
}

void Http2EventWriter::cancel() { stream_.cancelWait(); }

}  // namespace proxy::io
