// The x/net/websocket server side the watch WebSocket copies (W2): handshake answers and
// frames, byte for byte as kube-apiserver 1.37.2 wrote them when captured.
#include <doctest/doctest.h>

#include <string>

#include "stream_test_util.h"
#include "tests/apiserver/http/websocket_protocol.h"

namespace testapi::websocket {
namespace {

HttpRequest upgradeRequest() {
  HttpRequest req;
  req.method = "GET";
  test::addWebSocketUpgrade(req);
  return req;
}

// A client frame, masked with the key 01 02 03 04 unless `masked` is false.
std::string clientFrame(uint8_t first_byte, const std::string& payload, bool masked = true) {
  std::string f(1, static_cast<char>(first_byte));
  const unsigned char key[4] = {1, 2, 3, 4};
  const auto n = payload.size();
  const char mask_bit = masked ? static_cast<char>(0x80) : 0;
  if (n <= 125) {
    f += static_cast<char>(mask_bit | static_cast<char>(n));
  } else {
    f += static_cast<char>(mask_bit | 126);
    f += static_cast<char>(n >> 8);
    f += static_cast<char>(n & 0xff);
  }
  if (!masked) return f + payload;
  f.append(reinterpret_cast<const char*>(key), 4);
  for (size_t i = 0; i < n; ++i) f += static_cast<char>(payload[i] ^ key[i % 4]);
  return f;
}

}  // namespace

TEST_CASE("W2 websocket: the 101 carries exactly Go's Upgrade, Connection and Sec-WebSocket-Accept lines") {
  auto h = answerHandshake(upgradeRequest());
  CHECK(h.accepted);
  CHECK(h.answer ==
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
  SUBCASE("any non-empty key is taken, even one Beast would refuse") {
    auto req = upgradeRequest();
    req.headers["sec-websocket-key"] = std::string(40, 'x');
    CHECK(answerHandshake(req).answer.find("Sec-WebSocket-Accept: 8BtGdRKLPCV+ZzF/tANRJoS9Xgc=\r\n") !=
          std::string::npos);
  }
  SUBCASE("one offered subprotocol is echoed, trimmed") {
    auto req = upgradeRequest();
    req.headers["sec-websocket-protocol"] = " foo ";
    CHECK(answerHandshake(req).answer.find("\r\nSec-WebSocket-Protocol: foo\r\n\r\n") != std::string::npos);
  }
}

TEST_CASE("W2 websocket: refused handshakes answer as Go writes them, without headers, then close") {
  auto req = upgradeRequest();
  SUBCASE("no Origin: 403 without a body") {
    req.headers.erase("origin");
    CHECK(answerHandshake(req).answer == "HTTP/1.1 403 Forbidden\r\n\r\n");
  }
  SUBCASE("an Origin that is no request URI: 403") {
    for (const char* origin : {"null", "example.com", "http://host:port", "http://a b"}) {
      req.headers["origin"] = origin;
      CHECK_MESSAGE(!answerHandshake(req).accepted, origin);
    }
    for (const char* origin : {"/local", "localhost:8080", "https://example.com:443/x"}) {
      req.headers["origin"] = origin;
      CHECK_MESSAGE(answerHandshake(req).accepted, origin);
    }
  }
  SUBCASE("a version other than 13: 400 naming the supported one, checked before the Origin") {
    req.headers["sec-websocket-version"] = "8";
    req.headers.erase("origin");
    CHECK(answerHandshake(req).answer ==
          "HTTP/1.1 400 Bad Request\r\nSec-WebSocket-Version: 13\r\n\r\nmissing or bad WebSocket Version");
  }
  SUBCASE("no key: 400 mismatch challenge/response") {
    req.headers.erase("sec-websocket-key");
    CHECK(answerHandshake(req).answer == "HTTP/1.1 400 Bad Request\r\n\r\nmismatch challenge/response");
  }
  SUBCASE("two subprotocols: 400 without a body") {
    req.headers["sec-websocket-protocol"] = "a, b";
    CHECK(answerHandshake(req).answer == "HTTP/1.1 400 Bad Request\r\n\r\n");
  }
}

TEST_CASE("W2 websocket: an upgrade needs Upgrade websocket and a Connection that mentions upgrade") {
  auto req = upgradeRequest();
  req.headers["upgrade"] = "WebSocket";
  req.headers["connection"] = "keep-alive, Upgrade";
  CHECK(isWebSocketRequest(req));
  req.headers.erase("connection");
  CHECK_FALSE(isWebSocketRequest(req));
}

TEST_CASE("W2 websocket: server frames are unmasked, FIN set, with the shortest length form") {
  CHECK(frame(Opcode::Text, std::string(125, 'a')).substr(0, 2) == "\x81\x7d");
  CHECK(frame(Opcode::Text, std::string(126, 'a')).substr(0, 4) == std::string("\x81\x7e\x00\x7e", 4));
  CHECK(frame(Opcode::Binary, std::string(65536, 'a')).substr(0, 10) ==
        std::string("\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00", 10));
  CHECK(closeFrame(kCloseNormal) == std::string("\x88\x02\x03\xe8", 4));
}

TEST_CASE("W2 websocket: what the server does with a client's frames") {
  ClientFrameReader reader;
  std::string reply;
  SUBCASE("data frames are dropped") {
    CHECK_FALSE(reader.feed(clientFrame(0x81, "hello") + clientFrame(0x82, std::string(300, 'x')), reply));
    CHECK(reply.empty());
  }
  SUBCASE("a ping, even arriving byte by byte, is answered with its payload") {
    const std::string ping = clientFrame(0x89, "pingdata");
    for (char c : ping) CHECK_FALSE(reader.feed(std::string(1, c), reply));
    CHECK(reply == "\x8a\x08pingdata");
  }
  SUBCASE("a ping's answer keeps only its first 125 bytes") {
    CHECK_FALSE(reader.feed(clientFrame(0x89, std::string(200, 'p')), reply));
    CHECK(reply == "\x8a\x7d" + std::string(125, 'p'));
  }
  SUBCASE("a close frame ends the watch; the close 1000 comes from the stream's end") {
    CHECK(reader.feed(clientFrame(0x88, "\x03\xe9" "bye"), reply));
    CHECK(reply.empty());
  }
  SUBCASE("an unmasked frame is answered with a close 1002 and ends the watch") {
    CHECK(reader.feed(clientFrame(0x81, "hello", false), reply));
    CHECK(reply == std::string("\x88\x02\x03\xea", 4));
  }
  SUBCASE("a data frame announcing more than 32 MiB ends the watch") {
    std::string header = "\x82\xff";
    header += std::string("\x00\x00\x00\x00\x02\x00\x00\x01", 8);  // 32 MiB + 1
    header += std::string("\x01\x02\x03\x04", 4);
    CHECK(reader.feed(header, reply));
  }
}

}  // namespace testapi::websocket
