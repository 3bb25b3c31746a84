#pragma once
// The server side of golang.org/x/net/websocket as kube-apiserver serves a watch over it
// (handlers/watch.go serveWatchHandler and HandleWS, W2): which requests it takes
// (wsstream.IsWebSocketRequest), its handshake answers byte for byte (newServerConn with
// websocket.Handler's Origin check), the frames it writes and how it reads a client's.
// Pure functions and a parser: the connection layer moves the bytes.

#include <cstdint>
#include <string>
#include <string_view>

#include "tests/apiserver/http/http_types.h"

namespace testapi::websocket {

// Upgrade: websocket (any case) and a Connection header containing "upgrade".
bool isWebSocketRequest(const HttpRequest& req);

struct Handshake {
  bool accepted = false;
  // What to write: the 101 head, or an error answer (no header but Sec-WebSocket-Version
  // on a bad version, a bare text body) after which the connection is closed.
  std::string answer;
};
// Go checks, in order: the method (405), Upgrade/Connection (400), Sec-WebSocket-Key
// (400), Sec-WebSocket-Version 13 (400), then the Origin (403: missing or not a request
// URI), then that at most one subprotocol is left (400, no body). The 101 carries exactly
// Upgrade, Connection, Sec-WebSocket-Accept and the one subprotocol, if any: nothing else,
// as the response writer's headers (Audit-Id, Content-Type) are never written once hijacked.
Handshake answerHandshake(const HttpRequest& req);

enum class Opcode : uint8_t { Continuation = 0, Text = 1, Binary = 2, Close = 8, Ping = 9, Pong = 10 };
constexpr uint16_t kCloseNormal = 1000;         // ws.Close() when the handler returns
constexpr uint16_t kCloseProtocolError = 1002;  // an unmasked client frame

// One unmasked frame with FIN set, the payload length in the shortest form (hybiFrameWriter).
std::string frame(Opcode op, std::string_view payload);
std::string closeFrame(uint16_t status);

// A client's frames as the watch's IgnoreReceives loop takes them: data frames are read
// and dropped, a ping is answered with a pong of its first 125 bytes, and the watch ends
// on a close frame, an unmasked frame (after a 1002 close) or a data frame over 32 MiB
// (ErrFrameTooLarge). Bytes may arrive in any pieces.
class ClientFrameReader {
 public:
  // Consumes `bytes`; appends what the server answers to `reply`. True once the watch ends.
  bool feed(std::string_view bytes, std::string& reply);

 private:
  bool headerComplete(std::string& reply);
  bool ended_ = false;
  std::string header_;         // the current frame's header bytes, until complete
  bool in_payload_ = false;
  uint8_t opcode_ = 0;
  uint64_t remaining_ = 0;     // payload bytes of the current frame not yet seen
  uint64_t position_ = 0;      // payload bytes seen, for unmasking
  unsigned char mask_[4] = {};
  std::string ping_payload_;   // the first 125 bytes of a ping, unmasked
};

}  // namespace testapi::websocket
