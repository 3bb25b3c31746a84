#pragma once
// Http2EventWriter: a watch's events on an HTTP/2 stream (the EventWriter of Http2Stream).
// Frames are handed to the stream's queue as the shared frames they are; nghttp2 copies
// them once, into the connection's write batch. With gzip, what one send hands over is
// whole gzip members (appendGzipPieces, the HTTP/1.1 writer's rule per chunk), a shared
// frame's built once for every watcher. Lives on the stream's io thread.

#include <memory>
#include <vector>

#include "proxy/asio_beast.h"
#include "proxy/http/gzip_writer.h"
#include "proxy/stream.h"

namespace proxy::io {

class Http2Stream;

class Http2EventWriter final : public EventWriter {
 public:
  Http2EventWriter(Http2Stream& stream, bool gzip) : stream_(stream), gzip_(gzip) {}
  Http2EventWriter(const Http2EventWriter&) = delete;
  Http2EventWriter& operator=(const Http2EventWriter&) = delete;

  void add(watch::FrameConstSharedPtr frame) override;
  size_t bytes() const override { return bytes_; }
  // Moves the frames into the stream's queue while it has room and wakes the
  // connection's writer; never waits.
  bool trySend(error_code& ec) override;
  asio::awaitable<void> flush() override;
  asio::awaitable<void> end() override;
  void cancel() override;

 private:
  Http2Stream& stream_;
  const bool gzip_;
  // With gzip, frames added since the last send, not yet members.
  std::vector<watch::FrameConstSharedPtr> unsealed_;
  // What is not yet in the stream's queue, as it goes on the wire.
  std::vector<WirePiece> pending_;
  size_t bytes_ = 0;
};

}  // namespace proxy::io
