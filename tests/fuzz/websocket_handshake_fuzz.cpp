// A WebSocket watch's handshake (proxy/websocket/handshake.h), from request fields the
// client chose: one "name: value" per line of the input. Invariants: an accepted handshake
// is the 101 with RFC 6455's accept value for the key, and echoes at most one subprotocol,
// never the bearer token's; a refusal is a 400 or a 403 status line; the token the
// authenticator takes out is valid UTF-8 and leaves no bearer entry behind.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "proxy/http/header_filter.h"
#include "proxy/websocket/handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  proxy::HeaderList headers;
  while (!rest.empty()) {
    const size_t eol = rest.find('\n');
    const std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  const proxy::ProtocolToken token = proxy::protocolToken(headers);
  if (!token.error) {
    // No entry left is the token's (an entry is trimmed as Go's strings.TrimSpace trims).
    std::string_view left = token.remaining_protocols;
    while (!left.empty()) {
      const size_t comma = left.find(',');
      std::string_view entry = left.substr(0, comma);
      while (!entry.empty() && (entry.front() == ' ' || entry.front() == '\t')) entry.remove_prefix(1);
      FUZZ_CHECK(!entry.starts_with(proxy::kBearerProtocolPrefix));
      left = comma == std::string_view::npos ? std::string_view{} : left.substr(comma + 1);
    }
  }
  const proxy::WebSocketHandshake hs = proxy::answerHandshake(headers, token.remaining_protocols);
  if (hs.accepted) {
    FUZZ_CHECK(hs.code == 101 && hs.answer.starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
    const std::string accept = proxy::webSocketAccept(proxy::findHeader(headers, "Sec-WebSocket-Key"));
    FUZZ_CHECK(hs.answer.find("Sec-WebSocket-Accept: " + accept + "\r\n") != std::string::npos);
    FUZZ_CHECK(hs.answer.ends_with("\r\n\r\n"));
  } else {
    FUZZ_CHECK(hs.code == 400 || hs.code == 403);
    FUZZ_CHECK(hs.answer.starts_with("HTTP/1.1 " + std::to_string(hs.code) + " "));
  }
  return 0;
}
