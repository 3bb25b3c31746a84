#pragma once
// Go's base64.RawURLEncoding (URL alphabet, no padding), byte for byte as the apiserver
// uses it: continue tokens (P2) and WebSocket bearer-token subprotocols (W2). Plain code.

#include <optional>
#include <string>
#include <string_view>

namespace cache {

std::string base64UrlEncode(std::string_view data);
// DecodeString: nullopt with Go's "illegal base64 data at input byte N" in `error`.
std::optional<std::string> base64UrlDecode(std::string_view src, std::string& error);

}  // namespace cache
