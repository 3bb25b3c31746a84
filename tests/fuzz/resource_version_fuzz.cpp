// resourceVersion parsing (strconv.ParseUint(s, 10, 64), contract R1, R6) must never
// crash; an accepted RV is all digits and survives a print/parse round trip, the
// store's own RV reader agrees with it, and a rejected one gets Go's error wording.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cache/object_meta_parser.h"
#include "cache/resource_version.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto rv = cache::ResourceVersion::parse(input);
  const auto store_rv = cache::parseObjectResourceVersion(input);
  if (!rv) {
    // The store never accepts what a request may not name.
    FUZZ_CHECK(!store_rv);
    const std::string error = cache::ResourceVersion::parseError(input);
    FUZZ_CHECK(error.starts_with("strconv.ParseUint: parsing \""));
    FUZZ_CHECK(error.ends_with(": invalid syntax") || error.ends_with(": value out of range"));
    const std::string message = cache::ResourceVersion::invalidMessage(input);
    FUZZ_CHECK(message.starts_with("resourceVersion: Invalid value: \""));
    FUZZ_CHECK(message.ends_with(error));
    FUZZ_CHECK(cache::ResourceVersion::listBadRequestMessage(input) == "invalid resource version: " + message);
    return 0;
  }
  FUZZ_CHECK(!input.empty());
  for (char c : input) FUZZ_CHECK(c >= '0' && c <= '9');
  FUZZ_CHECK(cache::ResourceVersion::parseError(input).empty());
  const std::string printed = rv->toString();
  FUZZ_CHECK(cache::ResourceVersion::parse(printed) == rv);
  // Printing drops only leading zeros.
  const size_t first_digit = input.find_first_not_of('0');
  FUZZ_CHECK(printed == (first_digit == std::string_view::npos ? "0" : input.substr(first_digit)));
  // Upstream RVs are at most 20 digits; within that the store reads them identically.
  if (input.size() <= 20) FUZZ_CHECK(store_rv && *store_rv == rv->value());
  return 0;
}
