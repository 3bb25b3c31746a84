#include "proxy/http/chunk_writer.h"


#include "proxy/http/http1_stream.h"
#include "proxy/http/socket_io.h"
#include "proxy/observability/proxy_metrics.h"

namespace proxy::io {

ChunkWriter::ChunkWriter(Http1Stream& stream, int direct_fd, ClientMetrics* client, bool gzip)
    : stream_(stream), fd_(direct_fd), client_(client), gzip_(gzip) {}

void ChunkWriter::add(watch::FrameConstSharedPtr frame) {
  bytes_ += frame->size();
  pieces_.push_back(std::move(frame));
}

void ChunkWriter::seal() {
  if (sealed_) return;
  chunk_bytes_ = 0;
  if (gzip_) {
    // A chunk of whole gzip members (appendGzipPieces), shared ones compressed once for
    // every watcher.
    gzipped_.clear();
    appendGzipPieces(pieces_, gzipped_);
    for (const auto& piece : gzipped_) chunk_bytes_ += piece.bytes.size();
  } else {
    for (const auto& piece : pieces_) chunk_bytes_ += piece->size();
  }
  size_line_.set(chunk_bytes_);
  sealed_ = true;
}

const std::vector<std::string_view>& ChunkWriter::remaining() {
  seal();
  views_.clear();
  size_t skip = sent_;
  auto push = [&](std::string_view piece) {
    if (skip >= piece.size()) {
      skip -= piece.size();
      return;
    }
    views_.push_back(piece.substr(skip));
    skip = 0;
  };
  push(size_line_.view());
  if (gzip_) {
    for (const auto& p : gzipped_) push(p.bytes);
  } else {
    for (const auto& p : pieces_) push(p->bytes());
  }
  push(kChunkEnd);
  return views_;
}

void ChunkWriter::clear() {
  pieces_.clear();
  gzipped_.clear();
  bytes_ = 0;
  sent_ = 0;
  sealed_ = false;
  chunk_bytes_ = 0;
}

bool ChunkWriter::trySend(error_code& ec) {
  ec = {};
  if (pieces_.empty()) return true;
  if (fd_ < 0) return false;
  const auto& views = remaining();
  iov_.resize(views.size());
  for (size_t i = 0; i < views.size(); ++i) iov_[i] = iovec{const_cast<char*>(views[i].data()), views[i].size()};
  const size_t n = sendSome(fd_, iov_, ec);
  if (n == 0) return false;  // a full send buffer, or `ec`
  sent_ += n;
  // Direct sends bypass the stream's rate policy: they count for the client here.
  if (client_) client_->bytesSent(n);
  if (sent_ < size_line_.view().size() + chunk_bytes_ + kChunkEnd.size()) return false;
  clear();
  return true;
}

asio::awaitable<void> ChunkWriter::flush() {
  error_code ec;
  if (trySend(ec)) co_return;
  if (ec) throw boost::system::system_error(ec);
  const std::vector<std::string_view> views = remaining();
  co_await stream_.send(views);
  clear();
}

asio::awaitable<void> ChunkWriter::end() {
  co_await flush();
  co_await stream_.send(std::span(&kLastChunk, 1));
}

void ChunkWriter::cancel() { stream_.connection().cancel(); }

}  // namespace proxy::io
