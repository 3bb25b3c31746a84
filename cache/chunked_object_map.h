#pragma once
// ChunkedObjectMap: the writer's sorted key -> object map, stored as a vector of
// copy-on-write ObjectChunks so that taking a snapshot is copying chunk pointers.
//
// Not thread-safe: the store mutates it under its exclusive lock and copies chunk
// pointers out under its shared lock.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "cache/object_chunk.h"

namespace cache {

class ChunkedObjectMap {
 public:
  ObjectConstSharedPtr get(std::string_view key) const;
  // Inserts or replaces by key; returns the previous object (or null). `seq` is the
  // current write sequence number, `shared_seq` that of the newest snapshot.
  ObjectConstSharedPtr upsert(ObjectConstSharedPtr object, uint64_t seq, uint64_t shared_seq);
  // Removes `key`; returns the removed object (or null).
  ObjectConstSharedPtr erase(std::string_view key, uint64_t seq, uint64_t shared_seq);
  // Replaces everything with `sorted` (sorted by key, unique).
  void assign(const std::vector<ObjectConstSharedPtr>& sorted, uint64_t seq);

  size_t size() const { return size_; }
  std::vector<ObjectChunkConstSharedPtr> chunks() const { return {chunks_.begin(), chunks_.end()}; }
  // Visits all objects in key order.
  template <typename Fn>
  void forEach(Fn&& fn) const {
    for (const auto& chunk : chunks_) {
      for (const auto& object : chunk->objects) fn(object);
    }
  }
  size_t chunkCount() const { return chunks_.size(); }

 private:
  // Makes chunks_[index] private to the writer, copying it if a snapshot may hold it.
  ObjectChunk& writable(size_t index, uint64_t seq, uint64_t shared_seq);

  // Non-empty chunks in key order; every key of chunk i < every key of chunk i+1.
  std::vector<ObjectChunkPtr> chunks_;
  size_t size_ = 0;
};

}  // namespace cache
