#pragma once
// ChunkWriter: a watch's events on HTTP/1.1 (the EventWriter of Http1Stream), written
// with as few syscalls and allocations as the delivery of one event to thousands of
// watchers allows. Lives on the stream's io thread.

#include <sys/uio.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/asio_beast.h"
#include "proxy/http/chunk_framing.h"
#include "proxy/http/gzip_writer.h"
#include "proxy/stream.h"

namespace proxy {
class ClientMetrics;
}

namespace proxy::io {

class Http1Stream;

// The chunked body of one watch response: frames are gathered (shared ones are not
// copied) and written as one chunk, so a batch of events is one write. A chunk that a
// non-blocking write sent only in part keeps its place; nothing is added to it until the
// rest is out. With gzip, a chunk carries the batch as whole gzip members
// (appendGzipPieces), so a watch flush ends with a whole member, as kube-apiserver 1.37's
// perFlushGzipWriter writes watch-lists.
class ChunkWriter final : public EventWriter {
 public:
  // What the direct sends need is read once here, so a send touches no stream object
  // (at 10,000 watchers each of those is a cache miss per delivery).
  ChunkWriter(Http1Stream& stream, int direct_fd, ClientMetrics* client, bool gzip);
  ChunkWriter(const ChunkWriter&) = delete;
  ChunkWriter& operator=(const ChunkWriter&) = delete;

  void add(watch::FrameConstSharedPtr frame) override;
  size_t bytes() const override { return bytes_; }
  // One non-blocking sendmsg of what is left of the chunk (plain TCP only: TLS bytes must
  // go through the encryption). A client that keeps up has room in its socket buffer, so
  // this skips the write timer and the completion post of an async write, which at
  // thousands of watchers per event are most of the per-delivery cost.
  bool trySend(error_code& ec) override;
  asio::awaitable<void> flush() override;
  asio::awaitable<void> end() override;
  void cancel() override;

 private:
  // Fixes the chunk's size line (and, with gzip, its members) before its first byte goes
  // out.
  void seal();
  // The chunk's buffers after the `sent_` bytes already written.
  const std::vector<std::string_view>& remaining();
  void clear();

  Http1Stream& stream_;
  const int fd_;                  // -1 for TLS: its bytes go through the stream
  ClientMetrics* const client_;   // the request's client bucket, or null
  const bool gzip_;
  std::vector<watch::FrameConstSharedPtr> pieces_;
  std::vector<WirePiece> gzipped_;  // with gzip, the sealed chunk's members
  size_t bytes_ = 0;
  ChunkSizeLine size_line_;       // set when the chunk is sealed
  bool sealed_ = false;
  size_t chunk_bytes_ = 0;        // the sealed chunk's payload
  size_t sent_ = 0;               // bytes of this chunk already written
  std::vector<std::string_view> views_;
  std::vector<iovec> iov_;
};

}  // namespace proxy::io
