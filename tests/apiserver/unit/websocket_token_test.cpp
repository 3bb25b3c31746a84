// The bearer token a WebSocket request may carry as a subprotocol
// (websocket.ProtocolAuthenticator), as kube-apiserver 1.37.2 took it when captured.
#include <doctest/doctest.h>

#include <string>

#include "tests/apiserver/auth/auth.h"
#include "stream_test_util.h"

namespace testapi {
namespace {

constexpr const char* kAdmin = "base64url.bearer.authorization.k8s.io.YWRtaW4tdG9rZW4";  // "admin-token"

HttpRequest upgrade(const std::string& protocols) {
  HttpRequest req;
  req.method = "GET";
  req.path = "/api/v1/namespaces/default/configmaps";
  test::addWebSocketUpgrade(req);
  req.headers["sec-websocket-protocol"] = protocols;
  return req;
}

}  // namespace

TEST_CASE("W2 websocket token: the token subprotocol authenticates and the others go on without it") {
  auto t = webSocketProtocolToken(upgrade(std::string(kAdmin) + ", v1.example.k8s.io"));
  CHECK_FALSE(t.malformed);
  CHECK(t.token == "admin-token");
  CHECK(t.other_protocols == "v1.example.k8s.io");
  auto outcome = authenticateRequest(upgrade(std::string(kAdmin) + ", v1.example.k8s.io"));
  REQUIRE(outcome.user);
  CHECK(outcome.user->name == "admin");
  CHECK(outcome.websocket_protocols == std::optional<std::string>("v1.example.k8s.io"));
}

TEST_CASE("W2 websocket token: alone, twice, or not base64url it is a 401") {
  for (const std::string& protocols :
       {std::string(kAdmin), std::string(kAdmin) + "," + kAdmin + ",foo",
        std::string("base64url.bearer.authorization.k8s.io.YWRtaW4tdG9rZW4=, foo"),
        std::string("base64url.bearer.authorization.k8s.io./w, foo")}) {
    CHECK_MESSAGE(webSocketProtocolToken(upgrade(protocols)).malformed, protocols);
    CHECK_MESSAGE(authenticateRequest(upgrade(protocols)).error->code == 401, protocols);
  }
}

TEST_CASE("W2 websocket token: an Authorization header wins and leaves the subprotocols as they are") {
  auto req = upgrade(std::string(kAdmin) + ", foo");
  req.headers["authorization"] = "Bearer bob-token";
  auto outcome = authenticateRequest(req);
  REQUIRE(outcome.user);
  CHECK(outcome.user->name == "bob");
  CHECK_FALSE(outcome.websocket_protocols);  // two subprotocols reach the handshake: its 400
}

TEST_CASE("W2 websocket token: only an upgrade request is read for one") {
  auto req = upgrade(std::string(kAdmin) + ", foo");
  req.headers.erase("upgrade");
  CHECK(authenticateRequest(req).error->code == 401);
}

}  // namespace testapi
