#pragma once
// shardSelector (KEP-5866): `shardRange(object.metadata.uid, '0x<16 hex>', '0x<16 hex>')`
// terms joined by `||`, all on one field (object.metadata.uid or .namespace); an object
// is selected when the 16-digit lowercase hex of the 64-bit FNV-1a hash of that field is
// in one of the ranges [start, end), end possibly '0x10000000000000000' (2^64).
// kube-apiserver parses it as CEL (apiserver pkg/sharding); this reads the plain
// spellings of that grammar and reports the apiserver's texts for the range checks.
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tests/apiserver/storage/object_codec.h"

namespace testapi {

class ShardSelector {
 public:
  struct Range {
    std::string start;  // "0x" + 16 or 17 hex digits, as written
    std::string end;
  };
  bool matches(const StoredObject& obj) const;
  // The apiserver's canonical form: "shardRange(KEY, 'START', 'END')" joined by " || ".
  std::string str() const;

 private:
  friend std::variant<ShardSelector, std::string> parseShardSelector(std::string_view);
  std::string key_;  // object.metadata.uid or object.metadata.namespace
  std::vector<Range> ranges_;
};

// The selector, or the error text the apiserver gives after "invalid shard selector: ".
std::variant<ShardSelector, std::string> parseShardSelector(std::string_view text);

}  // namespace testapi
