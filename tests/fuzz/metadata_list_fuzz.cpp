// An upstream PartialObjectMetadataList, JSON or protobuf, as a freshness probe reads it (issue #15): the
// parser may refuse anything, but must never crash, and what it accepts is a revision
// with non-empty keys and RVs that are revisions (contract R1).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cache/metadata_list.h"
#include "cache/protobuf/protobuf_metadata_list.h"
#include "fuzz_check.h"

namespace {

void check(const cache::Result<cache::MetadataList>& list) {
  if (!list) {
    FUZZ_CHECK(!list.error().message.empty());
    return;
  }
  FUZZ_CHECK(list->resource_version > 0);
  for (const auto& [key, rv] : list->items) {
    FUZZ_CHECK(rv > 0);
    // The key is "<namespace>/<name>" or "<name>", and the name is never empty.
    FUZZ_CHECK(!key.empty());
  }
}

}  // namespace

// The same input as JSON and as protobuf: the probe reads whichever the upstream chose.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  check(cache::parseMetadataList(input));
  check(cache::protobuf::parseMetadataList(input));
  return 0;
}
