#include <doctest/doctest.h>

#include "proxy/websocket/handshake.h"

using proxy::HeaderList;

namespace {

HeaderList upgrade(HeaderList extra = {}) {
  HeaderList h = {{"Upgrade", "websocket"},
                  {"Connection", "Upgrade"},
                  {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                  {"Sec-WebSocket-Version", "13"},
                  {"Origin", "http://localhost"}};
  for (auto& [name, value] : extra) {
    std::erase_if(h, [&](const auto& f) { return f.first == name; });
    if (!value.empty()) h.emplace_back(name, value);
  }
  return h;
}

}  // namespace

TEST_CASE("W2 websocket: the 101 is x/net/websocket's four lines, with RFC 6455's accept value") {
  const auto hs = proxy::answerHandshake(upgrade(), "");
  CHECK(hs.accepted);
  CHECK(hs.answer ==
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
  const auto one = proxy::answerHandshake(upgrade(), " base64.binary.k8s.io ");
  CHECK(one.answer.find("Sec-WebSocket-Protocol: base64.binary.k8s.io\r\n") != std::string::npos);
}

TEST_CASE("W2 websocket: refusals are Go's bare answers, in Go's order") {
  CHECK(proxy::answerHandshake(upgrade({{"Sec-WebSocket-Key", ""}}), "").answer ==
        "HTTP/1.1 400 Bad Request\r\n\r\nmismatch challenge/response");
  CHECK(proxy::answerHandshake(upgrade({{"Sec-WebSocket-Version", "8"}}), "").answer ==
        "HTTP/1.1 400 Bad Request\r\nSec-WebSocket-Version: 13\r\n\r\nmissing or bad WebSocket Version");
  for (const char* origin : {"", "null", "localhost"}) {
    CAPTURE(origin);
    const auto hs = proxy::answerHandshake(upgrade({{"Origin", origin}}), "");
    CHECK(hs.code == 403);
    CHECK(hs.answer == "HTTP/1.1 403 Forbidden\r\n\r\n");
  }
  CHECK(proxy::answerHandshake(upgrade(), "a.k8s.io, b.k8s.io").answer == "HTTP/1.1 400 Bad Request\r\n\r\n");
}

TEST_CASE("W2 websocket: the bearer-token subprotocol is taken out as the apiserver's authenticator does") {
  auto with = [](std::string protocols) { return proxy::protocolToken(upgrade({{"Sec-WebSocket-Protocol", protocols}})); };
  const auto ok = with("base64url.bearer.authorization.k8s.io.dG9rZW4, base64.binary.k8s.io");
  CHECK(ok.token == "token");
  CHECK(ok.remaining_protocols == "base64.binary.k8s.io");
  CHECK_FALSE(ok.error);
  CHECK(with("base64url.bearer.authorization.k8s.io.dG9rZW4").error == "missing additional subprotocol");
  CHECK(with("base64url.bearer.authorization.k8s.io.!!, x").error == "invalid base64.bearer.authorization token encoding");
  CHECK(with("base64url.bearer.authorization.k8s.io.YQ, base64url.bearer.authorization.k8s.io.Yg, x").error ==
        "multiple base64.bearer.authorization tokens specified");
  CHECK(with("base64.binary.k8s.io").token.empty());
}
