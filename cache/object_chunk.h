#pragma once
// The unit of sharing between the live object map and its snapshots: a sorted run of
// objects. Snapshots hold chunks by shared_ptr<const>; the writer copies a chunk before
// changing it if any snapshot may hold it (copy-on-write), so a snapshot costs one
// pointer per chunk and a write costs at most one chunk copy.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "cache/packing/compressed_run.h"
#include "cache/object.h"

namespace cache {

struct ObjectChunk {
  // Sorted by key, bytewise (P9); keys unique.
  std::vector<ObjectConstSharedPtr> objects;
  // The store's write sequence number when this chunk was created: the writer may change
  // it in place only while no snapshot was taken since (born_seq > last snapshot seq).
  uint64_t born_seq = 0;
  // The items compressed for gzip'd LISTs, made on first use (compressed_run.h).
  CompressedRuns compressed;
};
using ObjectChunkPtr = std::shared_ptr<ObjectChunk>;
using ObjectChunkConstSharedPtr = std::shared_ptr<const ObjectChunk>;

// Chunk size bounds. Measured with cache_bench (docs/design/store.md): 128 keeps a
// copy-on-write chunk copy at ~1 us while a 100,000-object snapshot is ~800 pointers.
inline constexpr size_t kChunkTargetSize = 128;
inline constexpr size_t kChunkMaxSize = 2 * kChunkTargetSize;

// Position of the first object in `objects` whose key is >= key.
inline std::vector<ObjectConstSharedPtr>::const_iterator lowerBoundByKey(const std::vector<ObjectConstSharedPtr>& objects,
                                                                          std::string_view key) {
  return std::lower_bound(objects.begin(), objects.end(), key,
                          [](const ObjectConstSharedPtr& o, std::string_view k) { return std::string_view(o->key()) < k; });
}

// Index of the chunk that holds (or would hold) `key`: the first whose last key >= key,
// else the last chunk. `chunks` must be non-empty and hold non-empty chunks.
template <typename ChunkPtr>
size_t chunkIndexFor(const std::vector<ChunkPtr>& chunks, std::string_view key) {
  auto it = std::partition_point(chunks.begin(), chunks.end(),
                                 [&](const ChunkPtr& c) { return std::string_view(c->objects.back()->key()) < key; });
  if (it == chunks.end()) return chunks.size() - 1;
  return static_cast<size_t>(it - chunks.begin());
}

}  // namespace cache
