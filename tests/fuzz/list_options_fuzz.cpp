// ListOptions parsing over arbitrary query strings must never crash, and every
// rejection must be a well-formed Status (known code, message present).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cache/query/list_options.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static const auto pods = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  for (bool gate : {false, true}) {
    auto parsed = cache::ListOptions::parse(input, *pods, cache::ListOptionsConfig{gate});
    if (parsed) {
      if (parsed->watch) FUZZ_CHECK(parsed->limit == 0 && parsed->continue_token.empty());
      if (!parsed->watch) (void)parsed->listSemantics();
      continue;
    }
    const auto& e = parsed.error();
    const unsigned code = cache::httpCode(e.reason);
    FUZZ_CHECK(code == 400 || code == 422 || code == 500);
    FUZZ_CHECK(!e.message.empty());
    FUZZ_CHECK((code == 422) == !e.causes.empty());
  }
  return 0;
}
