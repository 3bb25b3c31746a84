// Continue token decoding must never crash, and any token it accepts must survive a
// re-encode/decode round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cache/query/continue_token.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto token = cache::ContinueToken::decode(input);
  if (!token) {
    FUZZ_CHECK(token.error().starts_with("invalid continue token: continue key is not valid"));
    return 0;
  }
  FUZZ_CHECK(token->resource_version != 0);
  FUZZ_CHECK(!token->start.empty());
  auto again = cache::ContinueToken::decode(cache::ContinueToken::encodeStart(token->resource_version, token->start));
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->resource_version == token->resource_version);
  FUZZ_CHECK(again->start == token->start);
  return 0;
}
