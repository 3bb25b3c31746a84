// How watch events reach a client (W2): WebSocket messages and close frames, gzip'd
// watch-lists (W9, WatchListCompression), and what a restart does to open and resumed
// watches (W5, W6), through ApiServer with a fake connection.
#include <doctest/doctest.h>

#include <future>
#include <string>
#include <utility>
#include <vector>

#include "api_fixture.h"
#include "stream_test_util.h"

namespace testapi {
namespace {

using test::FakeStream;
using test::Fixture;

const char* kConfigMaps = "/api/v1/namespaces/default/configmaps";

HttpRequest webSocketWatch(const std::string& query) {
  HttpRequest req = Fixture::request("GET", std::string(kConfigMaps) + "?" + query);
  test::addWebSocketUpgrade(req);
  return req;
}

// The server's frames after the handshake head: (first byte, payload).
std::vector<std::pair<uint8_t, std::string>> framesAfterHead(const std::string& raw) {
  std::vector<std::pair<uint8_t, std::string>> out;
  size_t i = raw.find("\r\n\r\n");
  REQUIRE(i != std::string::npos);
  for (i += 4; i + 2 <= raw.size();) {
    size_t n = static_cast<unsigned char>(raw[i + 1]) & 0x7f, at = i + 2;
    if (n == 126) n = (static_cast<unsigned char>(raw[at]) << 8) | static_cast<unsigned char>(raw[at + 1]), at += 2;
    REQUIRE(n != 127);
    out.emplace_back(static_cast<uint8_t>(raw[i]), raw.substr(at, n));
    i = at + n;
  }
  return out;
}

// The data of a chunk that holds exactly one gzip member.
std::string gunzip(const std::string& member) {
  size_t used = 0;
  std::string data = test::inflateGzipMember(member, used);
  CHECK(used == member.size());
  return data;
}

bool hasHeader(const HttpResponse& r, const std::string& name, const std::string& value) {
  for (const auto& [k, v] : r.headers)
    if (k == name && v == value) return true;
  return false;
}

}  // namespace

TEST_CASE("W2 websocket: a watch-list is one text message per event, the end bookmark too, then close 1000 at its timeout") {
  Fixture f;
  f.configMap("a");
  FakeStream out;
  f.api.handle(webSocketWatch("watch=1&allowWatchBookmarks=true&timeoutSeconds=1"), out);
  const std::string raw = out.raw();
  CHECK(raw.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0) == 0);
  auto frames = framesAfterHead(raw);
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].first == 0x81);
  CHECK(frames[0].second.rfind(R"({"type":"ADDED","object":{"kind":"ConfigMap")", 0) == 0);
  CHECK(frames[0].second.back() == '\n');  // the event as the JSON encoder writes it
  CHECK(frames[1].first == 0x81);
  CHECK(frames[1].second.find(R"("k8s.io/initial-events-end":"true")") != std::string::npos);
  CHECK(frames[2] == std::make_pair(uint8_t{0x88}, std::string("\x03\xe8", 2)));
}

TEST_CASE("W2 websocket: a client's close frame ends the watch with a close 1000") {
  Fixture f;
  FakeStream out;
  auto done = std::async(std::launch::async, [&] { f.api.handle(webSocketWatch("watch=1&timeoutSeconds=60"), out); });
  REQUIRE(out.waitForRaw("\r\n\r\n"));
  out.sendFromPeer(std::string("\x88\x82\x01\x02\x03\x04\x02\xea", 8));  // close 1000, masked
  REQUIRE(done.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  auto frames = framesAfterHead(out.raw());
  REQUIRE(!frames.empty());
  CHECK(frames.back() == std::make_pair(uint8_t{0x88}, std::string("\x03\xe8", 2)));
}

TEST_CASE("W2 websocket: request errors come before the handshake as plain HTTP; a missing Origin is Go's 403") {
  Fixture f;
  FakeStream out;
  auto req = webSocketWatch("watch=1");
  req.headers["accept"] = "application/vnd.kubernetes.protobuf";
  f.api.handle(req, out);
  CHECK(out.response().status == 406);
  CHECK(out.raw().empty());
  FakeStream out2;
  req = webSocketWatch("watch=1&timeoutSeconds=1");
  req.headers.erase("origin");
  f.api.handle(req, out2);
  CHECK(out2.raw() == "HTTP/1.1 403 Forbidden\r\n\r\n");
}

TEST_CASE("W2 websocket: without authentication configured a token subprotocol is still taken out") {
  Fixture f;
  FakeStream out;
  auto req = webSocketWatch("watch=1&timeoutSeconds=1");
  req.headers["sec-websocket-protocol"] = "base64url.bearer.authorization.k8s.io.YW55, v1.example.k8s.io";
  f.api.handle(req, out);
  CHECK(out.raw().find("\r\nSec-WebSocket-Protocol: v1.example.k8s.io\r\n\r\n") != std::string::npos);
}

TEST_CASE("W5 websocket: a watch from a compacted RV is one ERROR message, then close 1000") {
  Fixture f;
  f.configMap("a");
  const uint64_t old = f.storage.currentRv();
  f.configMap("b");
  f.storage.compact();
  FakeStream out;
  f.api.handle(webSocketWatch("watch=1&resourceVersion=" + std::to_string(old)), out);
  auto frames = framesAfterHead(out.raw());
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].second.rfind(R"({"type":"ERROR","object":{"kind":"Status")", 0) == 0);
  CHECK(frames[0].second.find(R"("code":410)") != std::string::npos);
  CHECK(frames[1].first == 0x88);
}

TEST_CASE("W9 gzip: a watch-list accepting gzip is compressed, one complete member per flush") {
  Fixture f;
  f.configMap("a");
  FakeStream out;
  auto req = Fixture::request("GET", std::string(kConfigMaps) + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=2");
  req.headers["accept-encoding"] = "gzip, deflate";
  std::jthread watcher([&] { f.api.handle(req, out); });
  REQUIRE(out.waitForChunks(1));
  f.configMap("b");
  REQUIRE(out.waitForChunks(2));  // the new event arrives while the stream is open
  watcher.join();
  const HttpResponse r = out.response();
  CHECK(hasHeader(r, "Content-Encoding", "gzip"));
  CHECK(hasHeader(r, "Vary", "Accept-Encoding"));
  const auto chunks = out.chunks();
  const std::string first = gunzip(chunks[0]);
  CHECK(first.rfind(R"({"type":"ADDED")", 0) == 0);
  CHECK(first.find("k8s.io/initial-events-end") != std::string::npos);
  CHECK(gunzip(chunks[1]).find(R"("name":"b")") != std::string::npos);
}

TEST_CASE("W9 gzip: not for a watch from an RV, without bookmarks, or for an Accept-Encoding that is not exactly gzip") {
  Fixture f;
  f.configMap("a");
  const std::string rv = std::to_string(f.storage.currentRv());
  for (const auto& [query, encoding] : std::vector<std::pair<std::string, std::string>>{
           {"watch=1&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=" + rv, "gzip"},
           {"watch=1&timeoutSeconds=1", "gzip"},
           {"watch=1&allowWatchBookmarks=true&timeoutSeconds=1", "gzip;q=1.0"}}) {
    FakeStream out;
    auto req = Fixture::request("GET", std::string(kConfigMaps) + "?" + query);
    req.headers["accept-encoding"] = encoding;
    f.api.handle(req, out);
    CHECK_MESSAGE(!hasHeader(out.response(), "Content-Encoding", "gzip"), query);
  }
}

TEST_CASE("W6 restart: open watches are cut without their last chunk; resuming from before it is 410 naming its RV") {
  Fixture f;
  f.configMap("a");
  const uint64_t old = f.storage.currentRv();
  f.configMap("b");
  FakeStream open;
  auto done = std::async(std::launch::async, [&] {
    f.api.handle(Fixture::request("GET", std::string(kConfigMaps) + "?watch=1&timeoutSeconds=60&resourceVersion=" +
                                             std::to_string(old)),
                 open);
  });
  REQUIRE(open.waitFor(R"("name":"b")"));
  const uint64_t last_seen = f.storage.currentRv();
  const uint64_t restarted = f.storage.restart();
  REQUIRE(done.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(open.aborted());
  CHECK_FALSE(open.finished());

  auto r = f.call("GET", std::string(kConfigMaps) + "?watch=1&resourceVersion=" + std::to_string(old));
  CHECK(r.body == R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                  R"("message":"too old resource version: )" + std::to_string(old) + " (" + std::to_string(restarted) +
                      R"x()","reason":"Expired","code":410}})x" "\n");
  CHECK(restarted == last_seen + 1);  // the new process's own write: the last RV seen is too old too
  r = f.call("GET", std::string(kConfigMaps) + "?watch=1&resourceVersion=" + std::to_string(last_seen));
  CHECK(r.body.find("too old resource version: " + std::to_string(last_seen)) != std::string::npos);
  r = f.call("GET", std::string(kConfigMaps) + "?watch=1&timeoutSeconds=1&resourceVersion=" + std::to_string(restarted));
  CHECK(r.body.empty());  // from the restart point on, nothing is too old
  r = f.call("GET", std::string(kConfigMaps) + "?watch=1&timeoutSeconds=1&resourceVersion=0");
  CHECK(r.body.find(R"({"type":"ADDED")") != std::string::npos);
  r = f.call("GET", std::string(kConfigMaps) + "?resourceVersionMatch=Exact&resourceVersion=" + std::to_string(old));
  CHECK(r.status == 200);  // served by etcd, which kept the history
  CHECK(r.body.find(R"("resourceVersion":")" + std::to_string(old) + "\"") != std::string::npos);
  r = f.call("GET", std::string(kConfigMaps) + "?resourceVersion=" + std::to_string(old));
  CHECK(r.status == 200);
}

}  // namespace testapi
