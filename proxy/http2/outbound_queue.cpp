#include "proxy/http2/outbound_queue.h"

#include <algorithm>

namespace proxy::io {
namespace {

// Pieces a drained queue keeps room for: a watch's usual batch reuses it, while the room
// a burst made (a replay of thousands of events) is given back rather than kept for the
// rest of the watch's life, at 32 bytes a piece times 10,000 watches.
constexpr size_t kKeptPieces = 64;

}  // namespace

void OutboundQueue::push(watch::FrameConstSharedPtr frame) {
  if (!frame) return;
  const std::string_view bytes = frame->bytes();
  push(std::move(frame), bytes);
}

void OutboundQueue::push(watch::FrameConstSharedPtr owner, std::string_view bytes) {
  if (bytes.empty()) return;
  bytes_ += bytes.size();
  pieces_.push_back(Piece{std::move(owner), bytes});
}

void OutboundQueue::pushBorrowed(std::string_view bytes) {
  if (bytes.empty()) return;
  bytes_ += bytes.size();
  pieces_.push_back(Piece{nullptr, bytes});
}

void OutboundQueue::pushBorrowed(std::span<const std::string_view> pieces, size_t total) {
  if (pieces.empty() || total == 0) return;
  bytes_ += total;
  pieces_.push_back(Piece{nullptr, pieces.front(), pieces.subspan(1)});
}

void OutboundQueue::takeInto(size_t n, WriteBatch& out) {
  n = std::min(n, bytes_);
  bytes_ -= n;
  taken_ += n;
  while (n > 0) {
    const std::string_view rest = pieces_[head_].bytes.substr(offset_);
    const size_t k = std::min(n, rest.size());
    if (pieces_[head_].owner) {
      out.share(pieces_[head_].owner, rest.substr(0, k));
    } else {
      out.borrow(rest.substr(0, k));
    }
    n -= k;
    offset_ += k;
    Piece& piece = pieces_[head_];
    while (offset_ == piece.bytes.size() && !piece.rest.empty()) {
      piece.bytes = piece.rest.front();
      piece.rest = piece.rest.subspan(1);
      offset_ = 0;
    }
    if (offset_ == piece.bytes.size()) {
      piece.owner.reset();
      ++head_;
      offset_ = 0;
    }
  }
  dropTaken();
}

void OutboundQueue::dropTaken() {
  if (head_ == pieces_.size()) {
    pieces_.clear();
    head_ = 0;
    if (pieces_.capacity() > kKeptPieces) pieces_.shrink_to_fit();
  } else if (head_ >= kKeptPieces && head_ * 2 >= pieces_.size()) {
    pieces_.erase(pieces_.begin(), pieces_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

void OutboundQueue::clear() {
  bytes_ = 0;
  std::vector<Piece>().swap(pieces_);
  head_ = 0;
  offset_ = 0;
}

}  // namespace proxy::io
