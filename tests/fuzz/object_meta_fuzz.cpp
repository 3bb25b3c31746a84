// One upstream object (GET response, list item, watch event object) through the store's
// single-pass parser: bad JSON or metadata is an error, never a crash, and every object it
// accepts keeps the invariants of object_checks.h under both built-in and custom-resource
// options.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "object_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static cache::ObjectMetaParser pods(fuzz::podOptions());
  static cache::ObjectMetaParser custom(fuzz::customOptions());
  for (cache::ObjectMetaParser* parser : {&pods, &custom}) {
    auto object = parser->parseObject(input);
    if (!object) {
      FUZZ_CHECK(!object.error().message.empty());
      continue;
    }
    fuzz::checkObject(*parser, **object, input);
  }
  return 0;
}
