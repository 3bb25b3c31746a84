#pragma once
// Shard selectors (KEP-5866, the ShardedListAndWatch gate, alpha in 1.36-1.37): a LIST or
// WATCH with `shardSelector=shardRange(object.metadata.uid, '0x...', '0x...') || ...`
// gets only the objects whose field hashes (64-bit FNV-1a, as apimachinery's
// sharding.HashField) into one of the ranges [start, end); a list answer echoes the
// selector, written canonically, in metadata.shardInfo.selector.
//
// kube-apiserver parses the selector as a CEL expression and walks its syntax tree
// (apiserver pkg/sharding/parser.go): only shardRange() calls joined by `||`, the field
// object.metadata.uid or object.metadata.namespace (one for all ranges), bounds as
// 16-digit lowercase hex literals with a 0x prefix (or 0x10000000000000000, 2^64) and
// start < end. The proxy reads the plain spellings of that grammar: the calls, `||`,
// whitespace, single- or double-quoted literals without escapes. Anything else, valid
// CEL or not, is for the upstream to answer (its CEL parser's own error text included),
// so parse() returns nullopt and the request passes through.
//
// Immutable once built; matches() does not allocate.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cache {

// apimachinery sharding.HashField's 64-bit FNV-1a.
uint64_t shardHash(std::string_view value);

class ShardSelector {
 public:
  enum class Field { Uid, Namespace };
  struct Range {
    uint64_t start = 0;
    uint64_t end = 0;         // exclusive; unused when end_is_2_64
    bool end_is_2_64 = false;  // 0x10000000000000000
    bool contains(uint64_t hash) const { return hash >= start && (end_is_2_64 || hash < end); }
  };

  ShardSelector() = default;
  // nullopt: not a selector the proxy answers itself (see above).
  static std::optional<ShardSelector> parse(std::string_view text);

  bool empty() const { return ranges_.empty(); }
  Field field() const { return field_; }
  const std::vector<Range>& ranges() const { return ranges_; }
  // The object with this uid in this namespace ("" for a cluster-scoped one) is selected.
  bool matches(std::string_view uid, std::string_view namespace_name) const;
  // sharding.Selector's String(): shardRange(KEY, 'START', 'END') joined by " || ".
  const std::string& canonical() const { return canonical_; }

 private:
  Field field_ = Field::Uid;
  std::vector<Range> ranges_;
  std::string canonical_;
};

}  // namespace cache
