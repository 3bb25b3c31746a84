#pragma once
// ChunkWriter: the chunked body of one cached watch response (proxy/cached_watch.cpp),
// written with as few syscalls and allocations as the delivery of one event to thousands
// of watchers allows. Lives on the stream's io thread.

#include <sys/uio.h>

#include <charconv>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/write.hpp>

#include "proxy/asio_beast.h"
#include "proxy/downstream_stream.h"
#include "proxy/proxy_metrics.h"
#include "proxy/socket_io.h"
#include "watch/event_encoder.h"

namespace proxy::io {

// The chunked body of one watch response: frames are gathered (shared ones are not
// copied) and written as one chunk, so a batch of events is one write. A chunk that a
// non-blocking write sent only in part keeps its place; nothing is added to it until the
// rest is out.
class ChunkWriter {
 public:
  // What the direct sends need is read once here, so a send touches no stream object
  // (at 10,000 watchers each of those is a cache miss per delivery).
  ChunkWriter(DownstreamStream& stream, std::chrono::milliseconds timeout)
      : stream_(stream),
        timeout_(timeout),
        fd_(stream.directDescriptor()),
        client_(stream.client()) {}
  ChunkWriter(const ChunkWriter&) = delete;
  ChunkWriter& operator=(const ChunkWriter&) = delete;

  void add(watch::FrameConstSharedPtr frame) {
    bytes_ += frame->size();
    pieces_.push_back(std::move(frame));
  }
  void add(std::string&& frame) { add(std::make_shared<const std::string>(std::move(frame))); }
  size_t bytes() const { return bytes_; }
  bool empty() const { return pieces_.empty(); }

  // One non-blocking sendmsg of what is left of the chunk (plain TCP only: TLS bytes must
  // go through the encryption). True when the whole chunk is out. A client that keeps up
  // has room in its socket buffer, so this skips the write timer and the completion post
  // of an async write, which at thousands of watchers per event are most of the
  // per-delivery cost. `ec` is set on a failure other than a full buffer.
  bool trySend(error_code& ec) {
    ec = {};
    if (pieces_.empty()) return true;
    if (fd_ < 0) return false;
    const auto& buffers = remaining();
    sys_iov_.resize(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      sys_iov_[i].iov_base = const_cast<void*>(buffers[i].data());
      sys_iov_[i].iov_len = buffers[i].size();
    }
    const size_t n = sendSome(fd_, sys_iov_, ec);
    if (n == 0) return false;  // a full send buffer, or `ec`
    sent_ += n;
    // Direct sends bypass the stream's rate policy: they count for the client here.
    if (client_) client_->bytesSent(n);
    if (sent_ < size_line_len_ + bytes_ + 2) return false;
    clear();
    return true;
  }

  // Writes the rest of the chunk; throws when the client cannot be written to.
  asio::awaitable<void> flush() {
    error_code ec;
    if (trySend(ec)) co_return;
    if (ec) throw boost::system::system_error(ec);
    stream_.expires_after(timeout_);
    co_await asio::async_write(stream_, remaining(), asio::use_awaitable);
    stream_.expires_never();
    clear();
  }

 private:
  // The chunk's buffers after the `sent_` bytes already written. The size line is fixed
  // when the first byte goes out; the buffer list is reused (no allocation per event).
  const std::vector<asio::const_buffer>& remaining() {
    if (size_line_len_ == 0) {
      auto [end, ec] = std::to_chars(size_line_, size_line_ + sizeof size_line_ - 2, bytes_, 16);
      end[0] = '\r';
      end[1] = '\n';
      size_line_len_ = static_cast<size_t>(end + 2 - size_line_);
    }
    iov_.clear();
    size_t skip = sent_;
    auto push = [&](const void* data, size_t size) {
      if (skip >= size) {
        skip -= size;
        return;
      }
      iov_.push_back(asio::const_buffer(static_cast<const char*>(data) + skip, size - skip));
      skip = 0;
    };
    push(size_line_, size_line_len_);
    for (const auto& p : pieces_) push(p->data(), p->size());
    push("\r\n", 2);
    return iov_;
  }
  void clear() {
    pieces_.clear();
    bytes_ = 0;
    sent_ = 0;
    size_line_len_ = 0;
  }

  DownstreamStream& stream_;
  std::chrono::milliseconds timeout_;
  std::vector<watch::FrameConstSharedPtr> pieces_;
  size_t bytes_ = 0;
  const int fd_;                  // -1 for TLS: its bytes go through the stream
  ClientMetrics* const client_;   // the request's client bucket, or null
  char size_line_[24];            // hex size and CRLF, set when the chunk is first written
  size_t size_line_len_ = 0;      // 0: not yet set
  size_t sent_ = 0;               // bytes of this chunk already written
  std::vector<asio::const_buffer> iov_;
  std::vector<iovec> sys_iov_;
};

}  // namespace proxy::io
