#include "proxy/websocket/handshake.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <vector>

#include "cache/base64url.h"
#include "cache/selectors/field_error.h"

namespace proxy {
namespace {

// strings.TrimSpace for the ASCII spaces ('\t', '\n', '\v', '\f', '\r', ' ').
bool goSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string_view trimSpace(std::string_view s) {
  while (!s.empty() && goSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && goSpace(s.back())) s.remove_suffix(1);
  return s;
}

// utf8.Valid, for the decoded token.
bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto [rune, width] = cache::decodeUtf8(s, i);
    if (rune < 0) return false;
    i += width;
  }
  return true;
}

// Go's `fmt.Fprintf(buf, "HTTP/1.1 %03d %s\r\n", code, http.StatusText(code))`, the
// extra fields, the blank line and the error's text.
WebSocketHandshake refusal(unsigned code, std::string_view fields, std::string_view text) {
  WebSocketHandshake out;
  out.code = code;
  out.answer = "HTTP/1.1 " + std::to_string(code) + " " + std::string(reasonPhrase(code)) + "\r\n";
  out.answer.append(fields).append("\r\n").append(text);
  return out;
}

}  // namespace

ProtocolToken protocolToken(const HeaderFields& headers) {
  ProtocolToken out;
  bool saw_token = false;
  std::string filtered;
  size_t kept = 0;
  for (const auto& [name, value] : headers) {
    if (!headerNameEquals(name, "Sec-WebSocket-Protocol")) continue;
    std::string_view rest = value;
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view protocol = trimSpace(rest.substr(0, comma));
      if (!protocol.starts_with(kBearerProtocolPrefix)) {
        filtered += (kept++ == 0 ? "" : ",") + std::string(protocol);
      } else if (saw_token) {
        out.error = "multiple base64.bearer.authorization tokens specified";
        return out;
      } else {
        saw_token = true;
        std::string ignored;
        const auto decoded = cache::base64UrlDecode(protocol.substr(kBearerProtocolPrefix.size()), ignored);
        if (!decoded) {
          out.error = "invalid base64.bearer.authorization token encoding";
          return out;
        }
        if (!validUtf8(*decoded)) {
          out.error = "invalid base64.bearer.authorization token";
          return out;
        }
        out.token = *decoded;
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (!out.token.empty() && kept == 0) out.error = "missing additional subprotocol";
  out.remaining_protocols = std::move(filtered);
  return out;
}

std::string webSocketAccept(std::string_view key) {
  static constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  std::string input(key);
  input += kGuid;
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  std::vector<unsigned char> encoded(4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1);
  const int n = EVP_EncodeBlock(encoded.data(), digest, SHA_DIGEST_LENGTH);
  return std::string(reinterpret_cast<const char*>(encoded.data()), static_cast<size_t>(n));
}

WebSocketHandshake answerHandshake(const HeaderFields& headers, std::string_view protocols) {
  // ReadHandshake: the key, then the version (Go's Header.Get: the first value).
  const std::string_view key = findHeader(headers, "Sec-WebSocket-Key");
  if (key.empty()) return refusal(400, "", "mismatch challenge/response");
  if (findHeader(headers, "Sec-WebSocket-Version") != "13") {
    return refusal(400, "Sec-WebSocket-Version: 13\r\n", "missing or bad WebSocket Version");
  }
  // checkOrigin: an absent Origin is "null origin"; one that url.ParseRequestURI refuses
  // (not absolute, e.g. "null") too. Either is a bare 403.
  const std::string_view origin = findHeader(headers, "Origin");
  const bool parsable = origin.starts_with("/") || (origin.find("://") != std::string_view::npos &&
                                                     origin.find("://") > 0 && origin.find(' ') == std::string_view::npos);
  if (origin.empty() || !parsable) return refusal(403, "", "");
  // AcceptHandshake: more than one subprotocol left cannot be echoed.
  std::vector<std::string> offered;
  std::string_view rest = trimSpace(protocols);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    offered.emplace_back(trimSpace(rest.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (offered.size() > 1) return refusal(400, "", "");
  WebSocketHandshake out;
  out.accepted = true;
  out.answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
               webSocketAccept(key) + "\r\n";
  if (!offered.empty()) out.answer += "Sec-WebSocket-Protocol: " + offered.front() + "\r\n";
  out.answer += "\r\n";
  return out;
}

}  // namespace proxy
