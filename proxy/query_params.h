#pragma once
// Decoding of a raw URL query the way kube-apiserver's parameter codec does it
// (contract E4): the first value of a repeated key wins, unknown keys are ignored.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proxy {

// Percent-decodes one query component; '+' means a space (Go url.ParseQuery).
// Malformed escapes are kept literally rather than rejected: the proxy only
// inspects queries to label and route requests, and the upstream judges them.
std::string unescapeQueryComponent(std::string_view in);

// A parsed raw query. Keeps every key=value pair in order.
class QueryParams {
 public:
  QueryParams() = default;
  explicit QueryParams(std::string_view raw_query);

  // The first value of `key`, or nullopt when absent. `?watch` yields "".
  std::optional<std::string_view> get(std::string_view key) const;
  bool has(std::string_view key) const { return get(key).has_value(); }

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

// Boolean query parameters per contract E4 (apimachinery Convert_Slice_string_To_bool):
// absent is false; "0" or "false" in any case is false; anything else, including
// an empty value (`?watch`, `?watch=`) and the Python client's `True`, is true.
bool parseBoolParam(std::optional<std::string_view> value);

}  // namespace proxy
