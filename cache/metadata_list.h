#pragma once
// What an upstream PartialObjectMetadataList says about one scope of a resource: the
// revision it was read at and every object's key and resourceVersion. A consistent
// (RV unset) one is a freshness proof for an idle resource: when the cache holds exactly
// those objects at exactly those RVs, its state is the upstream's state at that revision,
// though no event or bookmark has told it so (docs/design.md, "Freshness proofs").
//
// Parsed with simdjson on demand; only metadata.name, .namespace and .resourceVersion of
// each item are read. Plain code, no I/O.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/result.h"
#include "cache/selectors/shard_selector.h"
#include "cache/snapshot.h"

namespace cache {

struct MetadataList {
  uint64_t resource_version = 0;  // the list RV
  // (store key, resourceVersion) of each item, in the order received.
  std::vector<std::pair<std::string, uint64_t>> items;
  bool has_continue = false;  // a page, not the whole scope
};

// BadRequest for anything that is not a complete list with numeric RVs.
Result<MetadataList> parseMetadataList(std::string_view body);

// True when `snapshot`, within namespace `ns` ("" = every object), holds exactly the
// objects of `upstream` (same keys, same resourceVersions) and no other.
// `shard`, when set, narrows the scope to the objects it selects (the upstream listed
// with that shardSelector).
bool sameObjects(const Snapshot& snapshot, std::string_view ns, const MetadataList& upstream,
                 const ShardSelector* shard = nullptr);
// How many objects of `snapshot` are in namespace `ns` ("" = all) and `shard` (null = all).
size_t objectsInScope(const Snapshot& snapshot, std::string_view ns, const ShardSelector* shard = nullptr);

}  // namespace cache
