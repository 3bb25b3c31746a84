#include "cache/snapshot.h"

namespace cache {

Snapshot::Snapshot(uint64_t resource_version, std::vector<ObjectChunkConstSharedPtr> chunks)
    : resource_version_(resource_version), chunks_(std::move(chunks)) {
  first_rank_.reserve(chunks_.size());
  for (const auto& chunk : chunks_) {
    first_rank_.push_back(size_);
    size_ += chunk->objects.size();
  }
}

SnapshotConstSharedPtr Snapshot::withChanges(const Snapshot& base, uint64_t resource_version,
                                             const std::vector<std::pair<std::string, ObjectConstSharedPtr>>& changes) {
  std::vector<ObjectChunkConstSharedPtr> chunks;
  chunks.reserve(base.chunks_.size() + 1);
  size_t next = 0;  // first change not yet applied
  auto merge = [&](const std::vector<ObjectConstSharedPtr>& objects, size_t change_end) {
    // Merges objects with changes [next, change_end) into a new chunk.
    auto chunk = std::make_shared<ObjectChunk>();
    chunk->objects.reserve(objects.size() + (change_end - next));
    size_t i = 0;
    while (i < objects.size() || next < change_end) {
      if (next == change_end || (i < objects.size() && objects[i]->key() < changes[next].first)) {
        chunk->objects.push_back(objects[i++]);
        continue;
      }
      if (i < objects.size() && objects[i]->key() == changes[next].first) ++i;  // replaced or removed
      if (changes[next].second) chunk->objects.push_back(changes[next].second);
      ++next;
    }
    if (!chunk->objects.empty()) chunks.push_back(std::move(chunk));
  };
  for (size_t c = 0; c < base.chunks_.size(); ++c) {
    const auto& objects = base.chunks_[c]->objects;
    const bool last = c + 1 == base.chunks_.size();
    size_t change_end = next;
    while (change_end < changes.size() && (last || changes[change_end].first <= objects.back()->key())) ++change_end;
    if (change_end == next) {
      chunks.push_back(base.chunks_[c]);
    } else {
      merge(objects, change_end);
    }
  }
  if (next < changes.size()) merge({}, changes.size());
  return std::make_shared<Snapshot>(resource_version, std::move(chunks));
}

Snapshot::Position Snapshot::lowerBound(std::string_view key) const {
  if (chunks_.empty()) return {};
  const size_t chunk = chunkIndexFor(chunks_, key);
  const auto& objects = chunks_[chunk]->objects;
  const size_t offset = static_cast<size_t>(lowerBoundByKey(objects, key) - objects.begin());
  if (offset == objects.size()) return {chunk + 1, 0};
  return {chunk, offset};
}

size_t Snapshot::rank(Position p) const {
  if (p.chunk >= chunks_.size()) return size_;
  return first_rank_[p.chunk] + p.offset;
}

ObjectConstSharedPtr Snapshot::get(std::string_view key) const {
  const Position p = lowerBound(key);
  if (p.chunk >= chunks_.size()) return nullptr;
  const auto& object = chunks_[p.chunk]->objects[p.offset];
  return object->key() == key ? object : nullptr;
}

ListPage Snapshot::list(const ListRequest& request) const {
  ListPage page;
  std::string range_begin, range_end;  // [begin, end); end empty = unbounded
  if (!request.namespace_name.empty()) {
    // "<ns>/" .. "<ns>0": '0' is the byte after '/'.
    range_begin.append(request.namespace_name).append(1, '/');
    range_end.append(request.namespace_name).append(1, '0');
  }
  const std::string_view begin_key = std::max(std::string_view(range_begin), request.start_key);
  const Position end = range_end.empty() ? Position{chunks_.size(), 0} : lowerBound(range_end);
  const size_t end_rank = rank(end);
  Position p = lowerBound(begin_key);
  if (request.limit > 0) page.items.reserve(std::min(request.limit, end_rank - std::min(end_rank, rank(p))));
  while (p.chunk < chunks_.size() && rank(p) < end_rank) {
    const auto& objects = chunks_[p.chunk]->objects;
    const size_t chunk_first_item = page.items.size();
    // Every object of the chunk so far is on the page.
    bool whole = p.offset == 0;
    for (; p.offset < objects.size(); ++p.offset) {
      if (rank(p) >= end_rank) {
        whole = false;
        break;
      }
      const ObjectConstSharedPtr& object = objects[p.offset];
      if (request.predicate && !request.predicate(*object)) {
        whole = false;
        continue;
      }
      page.items.push_back(object);
      if (whole && p.offset + 1 == objects.size()) page.whole_chunks.push_back({chunk_first_item, chunks_[p.chunk]});
      if (request.limit > 0 && page.items.size() == request.limit) {
        const size_t after = end_rank - (rank(p) + 1);
        page.has_more = after > 0;
        page.remaining = after;
        return page;
      }
    }
    p = {p.chunk + 1, 0};
  }
  return page;
}

void Snapshot::forEach(const std::function<bool(const ObjectConstSharedPtr&)>& fn) const {
  for (const auto& chunk : chunks_) {
    for (const auto& object : chunk->objects) {
      if (!fn(object)) return;
    }
  }
}

}  // namespace cache
