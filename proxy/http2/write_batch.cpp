#include "proxy/http2/write_batch.h"

#include <algorithm>
#include <climits>
#include <span>

#include "proxy/http/socket_io.h"

namespace proxy::io {
namespace {

// Buffers handed to one sendmsg (the kernel's limit).
constexpr size_t kMaxSlices = IOV_MAX;
// The arena a drained batch keeps: a watch connection's usual batch (a few events) reuses
// it, a larger one's is given back (a TLS connection copies up to a batch's worth, 64 KiB,
// which 1,000 connections of watches would otherwise each keep).
constexpr size_t kKeptArenaBytes = 16 * 1024;

}  // namespace

void WriteBatch::copy(std::string_view bytes) {
  if (bytes.empty()) return;
  const size_t offset = arena_.size();
  arena_.append(bytes);
  bytes_ += bytes.size();
  if (copying_) return;
  if (!arena_pieces_.empty() && arena_pieces_.back().index + 1 == iov_.size() &&
      arena_pieces_.back().offset + iov_.back().iov_len == offset) {
    iov_.back().iov_len += bytes.size();
  } else {
    arena_pieces_.push_back(ArenaPiece{iov_.size(), offset});
    iov_.push_back(iovec{nullptr, bytes.size()});
  }
}

void WriteBatch::share(const watch::FrameConstSharedPtr& owner, std::string_view bytes) {
  if (copying_) return copy(bytes);
  if (owners_.empty() || owners_.back() != owner) owners_.push_back(owner);
  borrow(bytes);
}

void WriteBatch::borrow(std::string_view bytes) {
  if (copying_) return copy(bytes);
  if (bytes.empty()) return;
  iov_.push_back(iovec{const_cast<char*>(bytes.data()), bytes.size()});
  bytes_ += bytes.size();
}

size_t WriteBatch::sendSome(int fd, boost::system::error_code& ec) {
  ec = {};
  if (bytes_ == 0) return 0;
  if (copying_) {
    const std::string_view rest = contiguous();
    const iovec whole{const_cast<char*>(rest.data()), rest.size()};
    const size_t n = proxy::sendSome(fd, std::span(&whole, 1), ec);
    consume(n);
    return n;
  }
  for (const ArenaPiece& piece : arena_pieces_) iov_[piece.index].iov_base = arena_.data() + piece.offset;
  // The first piece from where the last send stopped, for this call only: consume()
  // counts in whole pieces.
  const iovec first = iov_[first_];
  iov_[first_].iov_base = static_cast<char*>(first.iov_base) + first_offset_;
  iov_[first_].iov_len -= first_offset_;
  const size_t count = std::min(kMaxSlices, iov_.size() - first_);
  const size_t n = proxy::sendSome(fd, std::span<const iovec>(iov_.data() + first_, count), ec);
  iov_[first_] = first;
  consume(n);
  return n;
}

bool WriteBatch::sendWhileTaken(int fd, boost::system::error_code& ec) {
  while (!empty() && sendSome(fd, ec) > 0) {
  }
  return empty();
}

void WriteBatch::consume(size_t n) {
  bytes_ -= n;
  sent_ += n;
  if (copying_) return;
  while (n > 0) {
    const size_t left = iov_[first_].iov_len - first_offset_;
    if (n < left) {
      first_offset_ += n;
      return;
    }
    n -= left;
    ++first_;
    first_offset_ = 0;
  }
}

void WriteBatch::clear() {
  if (arena_.capacity() > kKeptArenaBytes) {
    std::string().swap(arena_);
  } else {
    arena_.clear();
  }
  iov_.clear();
  arena_pieces_.clear();
  owners_.clear();
  bytes_ = sent_ = first_ = first_offset_ = 0;
}

}  // namespace proxy::io
