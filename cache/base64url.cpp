#include "cache/base64url.h"

#include <cstdint>

namespace cache {
namespace {

constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

std::string base64UrlEncode(std::string_view data) {
  std::string out;
  out.reserve((data.size() * 4 + 2) / 3);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const uint32_t v = (static_cast<unsigned char>(data[i]) << 16) | (static_cast<unsigned char>(data[i + 1]) << 8) |
                       static_cast<unsigned char>(data[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kBase64Url[(v >> shift) & 0x3F]);
  }
  const size_t rest = data.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<unsigned char>(data[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(data[i + 1]) << 8;
    out.push_back(kBase64Url[(v >> 18) & 0x3F]);
    out.push_back(kBase64Url[(v >> 12) & 0x3F]);
    if (rest == 2) out.push_back(kBase64Url[(v >> 6) & 0x3F]);
  }
  return out;
}

// base64.RawURLEncoding.DecodeString: quanta of four significant characters, '\r' and
// '\n' skipped, a lone trailing character or any other byte (including '=') is
// "illegal base64 data at input byte N" with Go's offsets; trailing bits are ignored.
std::optional<std::string> base64UrlDecode(std::string_view src, std::string& error) {
  std::string out;
  size_t si = 0;
  while (si < src.size()) {
    int buf[4] = {0, 0, 0, 0};
    size_t len = 4;
    for (size_t j = 0; j < 4; ++j) {
      if (si == src.size()) {
        if (j == 0) return out;
        if (j == 1) {
          error = "illegal base64 data at input byte " + std::to_string(si - j);
          return std::nullopt;
        }
        len = j;
        break;
      }
      const char c = src[si++];
      const int v = base64Value(c);
      if (v >= 0) {
        buf[j] = v;
        continue;
      }
      if (c == '\n' || c == '\r') {
        --j;
        continue;
      }
      error = "illegal base64 data at input byte " + std::to_string(si - 1);
      return std::nullopt;
    }
    const uint32_t v = (buf[0] << 18) | (buf[1] << 12) | (buf[2] << 6) | buf[3];
    out.push_back(static_cast<char>(v >> 16));
    if (len >= 3) out.push_back(static_cast<char>((v >> 8) & 0xFF));
    if (len == 4) out.push_back(static_cast<char>(v & 0xFF));
  }
  return out;
}

}  // namespace cache
