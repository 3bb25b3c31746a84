#pragma once
// CompressedRun: a whole ObjectChunk's list items, compressed once and kept with the
// chunk so that a gzip'd LIST concatenates stored blocks instead of deflating every
// object per request (proxy/http/gzip_writer.h builds and splices them). The cache only keeps
// the bytes; it does not know how they were made.
//
// A chunk is immutable once a snapshot holds it (object_chunk.h), and LISTs read chunks
// only through snapshots, so a run stays true for its chunk's life. Copying a chunk
// (copy-on-write) copies its objects, not its runs: the copy is about to change.
//
// Thread-safe: readers of the same chunk build a slot once, under the chunk's mutex.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace cache {

struct CompressedRun {
  std::string deflate;      // raw deflate, ending on a byte boundary, no final block
  uint32_t crc32 = 0;       // of the plain bytes
  uint64_t plain_size = 0;  // plain bytes
};
using CompressedRunConstSharedPtr = std::shared_ptr<const CompressedRun>;

// Deflated bytes all kept runs hold, process-wide (/metrics: they are made only for
// resources someone lists gzip'd, and live as long as the chunks that keep them).
uint64_t compressedRunBytes();

class CompressedRuns {
 public:
  // One slot per way of writing the items (JSON, PartialObjectMetadata, protobuf, ...).
  static constexpr size_t kSlots = 8;

  CompressedRuns() = default;
  CompressedRuns(const CompressedRuns&) {}
  CompressedRuns& operator=(const CompressedRuns&) {
    clear();
    return *this;
  }
  ~CompressedRuns() { clear(); }

  // The run in `slot`, made by `make()` on first use. Holding the mutex while making it
  // lets concurrent LISTs of one chunk share one deflate instead of racing to it.
  template <typename Make>
  CompressedRunConstSharedPtr getOrMake(size_t slot, Make&& make) const {
    std::lock_guard lock(mu_);
    CompressedRunConstSharedPtr& run = runs_.at(slot);
    if (!run) {
      run = make();
      if (run) count(static_cast<int64_t>(run->deflate.size()));
    }
    return run;
  }

  void clear() {
    std::lock_guard lock(mu_);
    for (auto& run : runs_) {
      if (run) count(-static_cast<int64_t>(run->deflate.size()));
      run.reset();
    }
  }

  // Compressed bytes held, for memory accounting.
  size_t bytes() const {
    std::lock_guard lock(mu_);
    size_t total = 0;
    for (const auto& run : runs_) total += run ? run->deflate.size() : 0;
    return total;
  }

 private:
  static void count(int64_t delta);

  mutable std::mutex mu_;
  mutable std::array<CompressedRunConstSharedPtr, kSlots> runs_;
};

}  // namespace cache
