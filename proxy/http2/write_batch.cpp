#include "proxy/http2/write_batch.h"

#include <climits>

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
  if (!pieces_.empty() && !pieces_.back().data && pieces_.back().offset + pieces_.back().size == offset) {
    pieces_.back().size += bytes.size();
  } else {
    pieces_.push_back(Piece{nullptr, offset, bytes.size()});
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
  pieces_.push_back(Piece{bytes.data(), 0, bytes.size()});
  bytes_ += bytes.size();
}

std::string_view WriteBatch::view(const Piece& piece) const {
  if (piece.data) return {piece.data, piece.size};
  return std::string_view(arena_).substr(piece.offset, piece.size);
}

size_t WriteBatch::sendSome(int fd, boost::system::error_code& ec) {
  ec = {};
  if (bytes_ == 0) return 0;
  iov_.clear();
  if (copying_) {
    const std::string_view rest = contiguous();
    iov_.push_back(iovec{const_cast<char*>(rest.data()), rest.size()});
  } else {
    for (size_t i = first_; i < pieces_.size() && iov_.size() < kMaxSlices; ++i) {
      const std::string_view v = view(pieces_[i]).substr(i == first_ ? first_offset_ : 0);
      iov_.push_back(iovec{const_cast<char*>(v.data()), v.size()});
    }
  }
  const size_t n = proxy::sendSome(fd, iov_, ec);
  consume(n);
  return n;
}

void WriteBatch::consume(size_t n) {
  bytes_ -= n;
  sent_ += n;
  if (copying_) return;
  while (n > 0) {
    const size_t left = pieces_[first_].size - first_offset_;
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
  pieces_.clear();
  owners_.clear();
  bytes_ = sent_ = first_ = first_offset_ = 0;
}

}  // namespace proxy::io
