#pragma once
// Indexer: named secondary indexes over the store's current objects (client-go
// Indexers/Indices). Each IndexFunc maps an object to zero or more values; the index
// maps each value to the objects having it, kept in key order so an indexed LIST comes
// out in the order a full scan would (P9).
//
// Built-in index functions: by namespace, by label "key=value", by selectable field
// value (spec.nodeName for per-node agents), and by custom JSON path (values extracted
// at ingestion, ParserOptions::index_paths).
//
// Indexes cover the current state only. Snapshot (historical) reads filter by scanning
// with the same predicate; see docs/design/store.md.
//
// Not thread-safe: ThreadSafeStore calls it under its lock. The index holds raw
// pointers to objects that the store's map keeps alive; update() must be called before
// the map drops an object.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/object.h"

namespace cache {

using IndexFunc = std::function<void(const Object&, std::vector<std::string>& values)>;

struct IndexDefinition {
  std::string name;
  IndexFunc func;
};

namespace indexes {
inline constexpr std::string_view kNamespace = "namespace";
inline constexpr std::string_view kLabels = "labels";
// metadata.namespace; cluster-scoped objects are not indexed.
IndexDefinition byNamespace();
// One value "key=value" per label.
IndexDefinition byLabels();
// The value of a selectable field ("field:spec.nodeName"); "" (missing) is not indexed.
IndexDefinition byField(std::string field_name);
std::string fieldIndexName(std::string_view field_name);
// The value of a custom JSON-path index ("path:<name>"); "" is not indexed.
IndexDefinition byIndexPath(std::string name);
std::string pathIndexName(std::string_view name);
}  // namespace indexes

class Indexer {
 public:
  explicit Indexer(std::vector<IndexDefinition> definitions);

  // Moves an object between index values: old_object's values are dropped, new_object's
  // added. Either may be null (add, remove).
  void update(const Object* old_object, const Object* new_object);
  void clear();

  bool hasIndex(std::string_view name) const;
  // Objects with `value` in index `name`, in key order. Empty when either is unknown.
  std::vector<ObjectConstSharedPtr> byIndex(std::string_view name, std::string_view value) const;
  size_t count(std::string_view name, std::string_view value) const;
  // Distinct values currently in index `name`.
  std::vector<std::string> values(std::string_view name) const;
  // Approximate heap bytes of all index entries.
  size_t overheadBytes() const { return entries_ * kBytesPerEntry + distinct_values_ * kBytesPerValue; }
  size_t entries() const { return entries_; }

 private:
  // A bucket is a key-sorted vector: 8 bytes per entry instead of a 64-byte tree node.
  // A value an object keeps across an update costs a binary search and a pointer swap;
  // only a value an object gains or loses shifts the bucket's tail.
  using Bucket = std::vector<const Object*>;
  struct Index {
    IndexDefinition definition;
    std::map<std::string, Bucket, std::less<>> by_value;
  };
  // An index value costs a map node, a short string and a vector header.
  static constexpr size_t kBytesPerEntry = sizeof(const Object*);
  static constexpr size_t kBytesPerValue = 96;

  const Index* find(std::string_view name) const;

  std::vector<Index> indexes_;
  std::vector<std::string> scratch_old_, scratch_new_;
  size_t entries_ = 0;
  size_t distinct_values_ = 0;
};

}  // namespace cache
