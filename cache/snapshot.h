#pragma once
// Snapshot: the immutable state of one resource at one resourceVersion, shared as
// SnapshotConstSharedPtr. Serves Exact and paginated LISTs (R3, P1, P8) in bytewise key
// order (P9) while the writer keeps going: it shares unchanged ObjectChunks with the live
// map and with other snapshots.
//
// Thread-safe (immutable). Objects returned stay valid while the caller holds them.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/object_chunk.h"

namespace cache {

class Snapshot;
using SnapshotConstSharedPtr = std::shared_ptr<const Snapshot>;

struct ListRequest {
  // Only keys "<namespace>/..." when set (a namespaced LIST); empty = all.
  std::string_view namespace_name;
  // Continue from this key, inclusive. A continue token's start is the last returned key
  // plus "\0" (P2), which makes this exclusive of that key.
  std::string_view start_key;
  // At most this many items; 0 = unlimited (P1).
  size_t limit = 0;
  // Selector; null matches everything. Keys that fail it still count as "more" (P6).
  std::function<bool(const Object&)> predicate;
};

// Items [first_item, first_item + chunk->objects.size()) of a page are all of `chunk`, in
// order: a gzip'd LIST can use the chunk's CompressedRuns for them.
struct WholeChunk {
  size_t first_item = 0;
  ObjectChunkConstSharedPtr chunk;
};

struct ListPage {
  std::vector<ObjectConstSharedPtr> items;  // in key order
  std::vector<WholeChunk> whole_chunks;     // in item order
  // The limit was reached and keys remain in range after the last item (P1, P6).
  bool has_more = false;
  // Keys in range after the last returned item, for remainingItemCount (P4).
  size_t remaining = 0;
};

class Snapshot {
 public:
  Snapshot(uint64_t resource_version, std::vector<ObjectChunkConstSharedPtr> chunks);

  // This snapshot with `changes` applied: each pair sets a key to an object, or removes
  // it when the object is null. `changes` must be sorted by key and unique. Only the
  // chunks that change are copied.
  static SnapshotConstSharedPtr withChanges(const Snapshot& base, uint64_t resource_version,
                                            const std::vector<std::pair<std::string, ObjectConstSharedPtr>>& changes);

  uint64_t resourceVersion() const { return resource_version_; }
  size_t size() const { return size_; }
  ObjectConstSharedPtr get(std::string_view key) const;
  ListPage list(const ListRequest& request) const;
  // Visits every object in key order until fn returns false.
  void forEach(const std::function<bool(const ObjectConstSharedPtr&)>& fn) const;
  size_t chunkCount() const { return chunks_.size(); }

 private:
  struct Position {
    size_t chunk = 0;
    size_t offset = 0;
  };
  Position lowerBound(std::string_view key) const;
  // Number of keys before `p`.
  size_t rank(Position p) const;

  uint64_t resource_version_;
  std::vector<ObjectChunkConstSharedPtr> chunks_;  // non-empty chunks in key order
  std::vector<size_t> first_rank_;                 // first_rank_[i] = keys in chunks before i
  size_t size_ = 0;
};

}  // namespace cache
