// Shard selector parsing (KEP-5866) must never crash; a selector that parses must write
// a canonical form that parses to the same selection, and the ranges of one selector
// must select consistently (a hash in a range is selected).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cache/selectors/shard_selector.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto parsed = cache::ShardSelector::parse(input);
  if (!parsed) return 0;
  FUZZ_CHECK(!parsed->empty());
  const auto again = cache::ShardSelector::parse(parsed->canonical());
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->canonical() == parsed->canonical());
  const std::string_view values[] = {"", "a", "default", "5f2b1c8e-0000-4000-8000-000000000001", input};
  for (std::string_view value : values) {
    FUZZ_CHECK(again->matches(value, value) == parsed->matches(value, value));
  }
  for (const cache::ShardSelector::Range& range : parsed->ranges()) {
    FUZZ_CHECK(range.end_is_2_64 || range.start < range.end);
    FUZZ_CHECK(range.contains(range.start));
  }
  return 0;
}
