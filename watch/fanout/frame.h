#pragma once
// Frame: one watch event as it goes on the wire, built once per event and shared by every
// watcher that sends it (the apiserver's cachingObject idea), so immutable. A watch-list
// gzip'd per flush (kube-apiserver 1.37) sends such a shared frame as a whole gzip member
// of its own; that form is built once too, by the first writer that needs it, rather than
// once per watcher: a gzip member per delivery was half the proxy's CPU with 2,000 such
// watches (docs/design.md). A frame only one watch sends (its initial state, its replay, a
// bookmark) is not shared and is compressed with its neighbours instead. watch/ knows no
// compression: the writer hands the function over.
//
// Thread-safe: writers on different io threads may ask for the compressed form at once.

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace watch {

class Frame {
 public:
  Frame(std::string bytes, bool shared) : bytes_(std::move(bytes)), shared_(shared) {}
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;

  const std::string& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  // Built for every watcher an event goes to (WatchDispatcher), not for one watch.
  bool shared() const { return shared_; }

  // The frame as `compress` makes it, built on the first call and kept for the frame's
  // life. Every caller passes the same function.
  using Compress = std::string (*)(std::string_view);
  const std::string& compressed(Compress compress) const {
    std::call_once(compressed_once_, [&] { compressed_ = compress(bytes_); });
    return compressed_;
  }

 private:
  const std::string bytes_;
  const bool shared_;
  mutable std::once_flag compressed_once_;
  mutable std::string compressed_;
};

using FrameConstSharedPtr = std::shared_ptr<const Frame>;

// A frame of one watch's own, and one sent to every watcher an event goes to.
inline FrameConstSharedPtr makeFrame(std::string bytes) {
  return std::make_shared<const Frame>(std::move(bytes), false);
}
inline FrameConstSharedPtr makeSharedFrame(std::string bytes) {
  return std::make_shared<const Frame>(std::move(bytes), true);
}

}  // namespace watch
