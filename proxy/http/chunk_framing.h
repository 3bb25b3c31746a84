#pragma once
// HTTP/1.1 chunked framing (RFC 9112 7.1), written in one place for the three bodies that
// are chunked: a streamed answer (Http1Stream), a watch's events (ChunkWriter) and a
// request body relayed upstream without a length. Plain code.

#include <charconv>
#include <cstddef>
#include <string_view>

namespace proxy {

// Holds a chunk's size line ("1a2b\r\n") without an allocation.
class ChunkSizeLine {
 public:
  ChunkSizeLine() = default;
  explicit ChunkSizeLine(size_t size) { set(size); }
  void set(size_t size) {
    auto [end, ec] = std::to_chars(text_, text_ + sizeof text_ - 2, size, 16);
    end[0] = '\r';
    end[1] = '\n';
    length_ = static_cast<size_t>(end + 2 - text_);
  }
  std::string_view view() const { return {text_, length_}; }

 private:
  char text_[24] = {};  // 16 hex digits for a 64-bit size, CRLF
  size_t length_ = 0;
};

// What ends a chunk's data, and what ends a chunked body (the last chunk, no trailers).
inline constexpr std::string_view kChunkEnd = "\r\n";
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace proxy
