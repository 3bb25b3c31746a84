#include "cache/chunked_object_map.h"

namespace cache {

ObjectConstSharedPtr ChunkedObjectMap::get(std::string_view key) const {
  if (chunks_.empty()) return nullptr;
  const auto& objects = chunks_[chunkIndexFor(chunks_, key)]->objects;
  auto it = lowerBoundByKey(objects, key);
  if (it == objects.end() || (*it)->key() != key) return nullptr;
  return *it;
}

ObjectChunk& ChunkedObjectMap::writable(size_t index, uint64_t seq, uint64_t shared_seq) {
  ObjectChunkPtr& chunk = chunks_[index];
  if (chunk->born_seq <= shared_seq) {
    chunk = std::make_shared<ObjectChunk>(ObjectChunk{chunk->objects, seq});
  }
  return *chunk;
}

ObjectConstSharedPtr ChunkedObjectMap::upsert(ObjectConstSharedPtr object, uint64_t seq, uint64_t shared_seq) {
  if (chunks_.empty()) {
    chunks_.push_back(std::make_shared<ObjectChunk>(ObjectChunk{{std::move(object)}, seq}));
    size_ = 1;
    return nullptr;
  }
  const size_t index = chunkIndexFor(chunks_, object->key());
  ObjectChunk& chunk = writable(index, seq, shared_seq);
  auto it = chunk.objects.begin() + (lowerBoundByKey(chunk.objects, object->key()) - chunk.objects.cbegin());
  if (it != chunk.objects.end() && (*it)->key() == object->key()) {
    ObjectConstSharedPtr previous = std::move(*it);
    *it = std::move(object);
    return previous;
  }
  chunk.objects.insert(it, std::move(object));
  ++size_;
  if (chunk.objects.size() > kChunkMaxSize) {
    // Split in halves; both halves are new, so private to the writer.
    auto upper = std::make_shared<ObjectChunk>();
    upper->born_seq = seq;
    upper->objects.assign(chunk.objects.begin() + kChunkTargetSize, chunk.objects.end());
    chunk.objects.resize(kChunkTargetSize);
    chunks_.insert(chunks_.begin() + static_cast<std::ptrdiff_t>(index) + 1, std::move(upper));
  }
  return nullptr;
}

ObjectConstSharedPtr ChunkedObjectMap::erase(std::string_view key, uint64_t seq, uint64_t shared_seq) {
  if (chunks_.empty()) return nullptr;
  const size_t index = chunkIndexFor(chunks_, key);
  {
    const auto& objects = chunks_[index]->objects;
    auto found = lowerBoundByKey(objects, key);
    if (found == objects.end() || (*found)->key() != key) return nullptr;
  }
  ObjectChunk& chunk = writable(index, seq, shared_seq);
  auto it = chunk.objects.begin() + (lowerBoundByKey(chunk.objects, key) - chunk.objects.cbegin());
  ObjectConstSharedPtr removed = std::move(*it);
  chunk.objects.erase(it);
  --size_;
  // Small chunks are tolerated (a relist rebuilds them); empty ones would break lookups.
  if (chunk.objects.empty()) chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(index));
  return removed;
}

void ChunkedObjectMap::assign(const std::vector<ObjectConstSharedPtr>& sorted, uint64_t seq) {
  chunks_.clear();
  for (size_t at = 0; at < sorted.size(); at += kChunkTargetSize) {
    const size_t end = std::min(sorted.size(), at + kChunkTargetSize);
    chunks_.push_back(std::make_shared<ObjectChunk>(
        ObjectChunk{{sorted.begin() + static_cast<std::ptrdiff_t>(at), sorted.begin() + static_cast<std::ptrdiff_t>(end)}, seq}));
  }
  size_ = sorted.size();
}

}  // namespace cache
