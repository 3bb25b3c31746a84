#pragma once
// base64url without padding, as Go's base64.RawURLEncoding encodes and decodes it.

#include <optional>
#include <string>
#include <string_view>

namespace testapi {

std::string base64UrlEncode(std::string_view in);
// DecodeString: CR/LF are skipped; any other byte outside the alphabet (padding included)
// is reported at its offset in `error` ("illegal base64 data at input byte N"), as is a
// dangling final character.
std::optional<std::string> base64UrlDecode(std::string_view in, std::string& error);

}  // namespace testapi
