// An upstream PartialObjectMetadataList as a freshness probe reads it (issue #15): the
// parser may refuse anything, but must never crash, and what it accepts is a revision
// with non-empty keys and RVs that are revisions (contract R1).
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
    // The key is "<namespace>/<name>" or "<name>", and the name is never empty.
    FUZZ_CHECK(!key.empty());
  }
  return 0;
}
