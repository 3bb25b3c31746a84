// Label selector parsing must never crash, and a selector that parses must evaluate
// and re-parse to the same requirements (parsing is deterministic).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cache/selectors/label_selector.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = cache::LabelSelector::parse(input);
  if (!parsed) {
    FUZZ_CHECK(!parsed.error().empty());
    return 0;
  }
  const cache::Labels labels{{"app", "web"}, {"n", "7"}, {"tier", ""}};
  const bool first = parsed->matches(labels);
  auto again = cache::LabelSelector::parse(input);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->matches(labels) == first);
  FUZZ_CHECK(again->requirements().size() == parsed->requirements().size());
  // An index may narrow by exact matches: an object without such a key never matches.
  for (const auto& [key, value] : parsed->exactMatches()) {
    cache::Labels without;
    for (const auto& label : labels) {
      if (label.first != key) without.push_back(label);
    }
    FUZZ_CHECK(!parsed->matches(without));
  }
  FUZZ_CHECK(parsed->matches(cache::Labels{}) || !parsed->empty());
  return 0;
}
