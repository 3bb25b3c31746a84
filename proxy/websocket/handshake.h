#pragma once
// The WebSocket handshake of a watch as kube-apiserver answers it (contract W2): its
// serveWatch hands the request to golang.org/x/net/websocket's Handler, whose server
// checks the request (hybiServerHandshaker.ReadHandshake), then the Origin (checkOrigin),
// then that one subprotocol at most is left to echo (AcceptHandshake), and writes its
// answers itself on the hijacked connection: the 101's four lines, or a bare status line
// with Go's error text. Before that, the apiserver's WebSocket bearer-token authenticator
// (authentication/request/websocket/protocol.go) takes
// "base64url.bearer.authorization.k8s.io.<token>" out of Sec-WebSocket-Protocol.
// Plain code (no Asio).

#include <optional>
#include <string>
#include <string_view>

#include "proxy/http/header_filter.h"

namespace proxy {

// The subprotocol prefix that carries a bearer token (browsers cannot set Authorization).
inline constexpr std::string_view kBearerProtocolPrefix = "base64url.bearer.authorization.k8s.io.";

// What the token authenticator makes of a request's subprotocols: the token (decoded),
// the protocols left, or why it refuses (a 401).
struct ProtocolToken {
  std::string token;                  // "" when none was given
  std::string remaining_protocols;    // Sec-WebSocket-Protocol without the token's entry
  std::optional<std::string> error;   // "missing additional subprotocol", ...
};
ProtocolToken protocolToken(const HeaderFields& headers);

struct WebSocketHandshake {
  bool accepted = false;
  unsigned code = 101;  // the status written
  // The whole answer as Go writes it: the 101 head, or a refusal (after which the
  // connection closes).
  std::string answer;
};

// The handshake's answer to `headers` (a GET whose Upgrade is websocket). `protocols` is
// Sec-WebSocket-Protocol as the authenticator left it.
WebSocketHandshake answerHandshake(const HeaderFields& headers, std::string_view protocols);

// RFC 6455 4.2.2: base64(SHA-1(key + the GUID)).
std::string webSocketAccept(std::string_view key);

}  // namespace proxy
