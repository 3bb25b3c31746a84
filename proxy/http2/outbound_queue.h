#pragma once
// OutboundQueue: the DATA an HTTP/2 stream has yet to send, as pieces where they lie:
// shared frames (a watch event encoded once for every watcher, or bytes the stream copied
// for a small write) are referenced, a large write's own bytes are borrowed until written.
// nghttp2's send_data callback takes them into the connection's WriteBatch as they are.
// Plain code; one per stream, on its io thread.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/http2/write_batch.h"
#include "watch/fanout/event_encoder.h"

namespace proxy::io {

class OutboundQueue {
 public:
  void push(watch::FrameConstSharedPtr frame);
  // Bytes `owner` keeps alive (another form of the frame, its gzip member).
  void push(watch::FrameConstSharedPtr owner, std::string_view bytes);
  // Bytes the caller keeps alive until the write that takes them has ended (or the queue
  // is cleared before they were taken).
  void pushBorrowed(std::string_view bytes);
  // The same for a large write's pieces, `total` bytes in all: one entry for the whole
  // span (the caller keeps the span too), not one per piece, which at a LIST's 30,000
  // pieces was most of what HTTP/2 cost over HTTP/1.1's gathered write.
  void pushBorrowed(std::span<const std::string_view> pieces, size_t total);

  size_t bytes() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  // Bytes ever pushed, and ever taken: a borrowed write is taken once taken() reaches the
  // pushed() its last piece ended at.
  uint64_t pushed() const { return taken_ + bytes_; }
  uint64_t taken() const { return taken_; }

  // Adds the first `n` bytes (at most bytes()) to `out` and drops them.
  void takeInto(size_t n, WriteBatch& out);
  // Drops everything (the stream failed): borrowed pieces are never read again, and
  // taken() stays short of what a waiting write needs.
  void clear();

 private:
  struct Piece {
    watch::FrameConstSharedPtr owner;  // null for a borrowed piece
    std::string_view bytes;
    // A borrowed span: the pieces after `bytes`, which become `bytes` in turn.
    std::span<const std::string_view> rest;
  };
  void dropTaken();

  // Invariant: pieces_[head_, end) are queued, the first with offset_ bytes already taken;
  // bytes_ is what they hold after that.
  std::vector<Piece> pieces_;
  size_t head_ = 0;
  size_t offset_ = 0;
  size_t bytes_ = 0;
  uint64_t taken_ = 0;
};

}  // namespace proxy::io
