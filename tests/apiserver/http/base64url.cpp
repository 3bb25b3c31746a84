// base64url without padding (Go's base64.RawURLEncoding), for continue tokens and the
// WebSocket bearer-token subprotocol.
#include "tests/apiserver/http/base64url.h"

#include <array>
#include <cstdint>

namespace testapi {
namespace {

constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

}  // namespace

std::string base64UrlEncode(std::string_view in) {
  std::string out;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += kBase64Url[(v >> 18) & 63];
    out += kBase64Url[(v >> 12) & 63];
    out += kBase64Url[(v >> 6) & 63];
    out += kBase64Url[v & 63];
  }
  const size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<unsigned char>(in[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kBase64Url[(v >> 18) & 63];
    out += kBase64Url[(v >> 12) & 63];
    if (rest == 2) out += kBase64Url[(v >> 6) & 63];
  }
  return out;
}

std::optional<std::string> base64UrlDecode(std::string_view in, std::string& error) {
  std::array<int, 256> map;
  map.fill(-1);
  for (int k = 0; k < 64; ++k) map[static_cast<unsigned char>(kBase64Url[k])] = k;
  std::string out;
  uint32_t acc = 0;
  int have = 0;
  size_t last_index = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c == '\n' || c == '\r') continue;
    if (map[c] < 0) {
      error = "illegal base64 data at input byte " + std::to_string(i);
      return std::nullopt;
    }
    acc = (acc << 6) | static_cast<uint32_t>(map[c]);
    last_index = i;
    if (++have == 4) {
      out += static_cast<char>((acc >> 16) & 0xFF);
      out += static_cast<char>((acc >> 8) & 0xFF);
      out += static_cast<char>(acc & 0xFF);
      acc = 0;
      have = 0;
    }
  }
  if (have == 1) {
    error = "illegal base64 data at input byte " + std::to_string(last_index);
    return std::nullopt;
  }
  if (have == 2) out += static_cast<char>((acc >> 4) & 0xFF);
  if (have == 3) {
    out += static_cast<char>((acc >> 10) & 0xFF);
    out += static_cast<char>((acc >> 2) & 0xFF);
  }
  return out;
}

}  // namespace testapi
