#pragma once
// Boolean query parameters as kube-apiserver's parameter codec reads them
// (contract E4). Decoding the query itself is cache::QueryValues, the one decoder
// shared with the cache's ListOptions (Go url.ParseQuery semantics).

#include <optional>
#include <string_view>

namespace proxy {

// Per contract E4 (apimachinery Convert_Slice_string_To_bool): absent is false;
// "0" or "false" in any case is false; anything else, including an empty value
// (`?watch`, `?watch=`) and the Python client's `True`, is true.
bool parseBoolParam(std::optional<std::string_view> value);

}  // namespace proxy
