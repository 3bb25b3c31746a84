#include "proxy/query_params.h"

#include <algorithm>
#include <cctype>

namespace proxy {

bool parseBoolParam(std::optional<std::string_view> value) {
  if (!value) return false;
  constexpr std::string_view kFalse = "false";
  const bool is_false = std::equal(value->begin(), value->end(), kFalse.begin(), kFalse.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == y;
  });
  return !(*value == "0" || is_false);
}

}  // namespace proxy
