#pragma once
// WriteBatch: the bytes of one socket write of an HTTP/2 connection, in order: nghttp2's
// own frames and every DATA frame's 9-byte header, copied; DATA payloads as the pieces of
// the streams' queues where they lie (shared frames referenced, a writer's borrowed bytes
// viewed). On plain TCP the batch goes to sendmsg gathered, so a payload is copied only by
// the kernel, as the HTTP/1.1 path writes a list; a TLS connection copies each payload
// into the batch once (`copying`), since the encryption reads one buffer anyway.
//
// A borrowed view is valid until its writer is told that the write ended (the connection
// does that); a copying batch needs nothing of the pieces once they are added. Plain
// code, on the connection's io thread.

#include <sys/uio.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <boost/system/error_code.hpp>

#include "watch/fanout/event_encoder.h"

namespace proxy::io {

class WriteBatch {
 public:
  explicit WriteBatch(bool copying) : copying_(copying) {}

  void copy(std::string_view bytes);
  void share(const watch::FrameConstSharedPtr& owner, std::string_view bytes);
  void borrow(std::string_view bytes);

  size_t bytes() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  bool copying() const { return copying_; }

  // One non-blocking sendmsg of what is left (at most IOV_MAX pieces); the bytes sent. 0
  // with `ec` clear when the socket's send buffer is full, with `ec` set when the client
  // is gone.
  size_t sendSome(int fd, boost::system::error_code& ec);
  // sendSome until the batch is empty, the send buffer is full or the client is gone
  // (`ec`); true when all of it is sent.
  bool sendWhileTaken(int fd, boost::system::error_code& ec);
  // A copying batch's bytes, after `sent` of them.
  std::string_view contiguous() const { return std::string_view(arena_).substr(sent_); }
  void consume(size_t n);
  void clear();

 private:
  const bool copying_;
  std::string arena_;
  // A gathered batch's pieces as sendmsg takes them, built as they are added (a LIST's
  // tens of thousands of pieces are written once, not again per send). The arena may
  // move while the batch grows, so its pieces get their address at each send.
  std::vector<iovec> iov_;
  struct ArenaPiece {
    size_t index;   // into iov_
    size_t offset;  // into arena_
  };
  std::vector<ArenaPiece> arena_pieces_;
  std::vector<watch::FrameConstSharedPtr> owners_;
  size_t bytes_ = 0;  // not yet sent
  size_t sent_ = 0;   // bytes from the start already sent
  // The first piece not wholly sent, and how much of it was.
  size_t first_ = 0;
  size_t first_offset_ = 0;
};

}  // namespace proxy::io
