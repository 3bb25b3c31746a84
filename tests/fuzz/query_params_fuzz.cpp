// Query decoding (Go url.ParseQuery semantics, shared by routing and ListOptions) and
// the boolean parameter codec (contract E4) must never crash. Decoded pairs, escaped
// again, decode to the same pairs; get() is the first value of a key; a boolean is
// false exactly for "0" and any casing of "false".
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cache/query/query_values.h"
#include "fuzz_check.h"
#include "proxy/query_params.h"

namespace {

// url.QueryEscape: unreserved bytes stay, space is '+', everything else is %XX.
std::string queryEscape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      out.append({'%', kHex[c >> 4], kHex[c & 15]});
    }
  }
  return out;
}

bool isFalse(std::string_view v) {
  if (v == "0") return true;
  if (v.size() != 5) return false;
  for (size_t i = 0; i < 5; ++i) {
    if (std::tolower(static_cast<unsigned char>(v[i])) != "false"[i]) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const cache::QueryValues query = cache::QueryValues::parse(input);
  const auto& pairs = query.pairs();

  size_t ampersands = 0;
  for (char c : input) ampersands += c == '&';
  FUZZ_CHECK(pairs.size() <= ampersands + 1);

  std::string escaped;
  for (const auto& [key, value] : pairs) {
    if (!escaped.empty()) escaped.push_back('&');
    escaped.append(queryEscape(key)).append("=").append(queryEscape(value));
    // get() answers with the first value of the key.
    const auto first = query.get(key);
    FUZZ_CHECK(first.has_value());
    for (const auto& [k, v] : pairs) {
      if (k == key) {
        FUZZ_CHECK(*first == v);
        break;
      }
    }
    FUZZ_CHECK(proxy::parseBoolParam(value) == !isFalse(value));
  }
  const cache::QueryValues reparsed = cache::QueryValues::parse(escaped);
  FUZZ_CHECK(reparsed.pairs() == pairs);

  FUZZ_CHECK(!proxy::parseBoolParam(std::nullopt));
  FUZZ_CHECK(proxy::parseBoolParam(input) == !isFalse(input));

  // url.QueryUnescape on its own: never longer than its input, and undoes queryEscape.
  if (const auto unescaped = cache::queryUnescape(input)) {
    FUZZ_CHECK(unescaped->size() <= input.size());
    FUZZ_CHECK(cache::queryUnescape(queryEscape(*unescaped)) == unescaped);
  }
  return 0;
}
