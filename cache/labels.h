#pragma once
// The label and field sets of one object as selectors see them (contract S1, S4).
// Both are sorted by key with unique keys, so lookups are binary searches and two
// sets compare with ==.

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cache {

using Labels = std::vector<std::pair<std::string, std::string>>;
// Field path ("spec.nodeName") -> value exactly as a field selector compares it
// (strings as is, booleans "true"/"false", integers in decimal, missing = "").
using Fields = std::vector<std::pair<std::string, std::string>>;

inline std::optional<std::string_view> lookup(const std::vector<std::pair<std::string, std::string>>& set,
                                              std::string_view key) {
  auto it = std::lower_bound(set.begin(), set.end(), key,
                             [](const auto& entry, std::string_view k) { return entry.first < k; });
  if (it == set.end() || it->first != key) return std::nullopt;
  return std::string_view(it->second);
}

}  // namespace cache
