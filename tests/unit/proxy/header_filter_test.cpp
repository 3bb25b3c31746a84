#include "proxy/http/header_filter.h"

#include <doctest/doctest.h>

using namespace proxy;

namespace {
bool hasHeader(const HeaderList& h, std::string_view name) { return !findHeader(h, name).empty(); }
}  // namespace

TEST_CASE("Request headers that matter to the apiserver are forwarded unchanged") {
  HeaderList in = {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
                   {"Content-Type", "application/strategic-merge-patch+json"},
                   {"Accept-Encoding", "gzip"},
                   {"User-Agent", "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07"},
                   {"Impersonate-User", "jane"},
                   {"Impersonate-Group", "devs"},
                   {"Audit-Id", "0f2f6a4e"},
                   {"Kubectl-Command", "kubectl get"}};
  HeaderList out = filterRequestHeaders(in, {"10.0.0.1:6443", "", ""});
  for (const auto& [name, value] : in) {
    CAPTURE(name);
    CHECK(findHeader(out, name) == value);
  }
  CHECK(findHeader(out, "Host") == "10.0.0.1:6443");
}

TEST_CASE("Hop-by-hop headers and those named in Connection are not forwarded") {
  HeaderList in = {{"Connection", "keep-alive, X-Private"}, {"Keep-Alive", "timeout=5"}, {"X-Private", "1"},
                   {"Transfer-Encoding", "chunked"},         {"Te", "trailers"},          {"Proxy-Authorization", "x"},
                   {"Content-Length", "12"},                 {"Expect", "100-continue"},  {"Host", "proxy:8080"}};
  HeaderList out = filterRequestHeaders(in, {"up:443", "", ""});
  for (const char* name : {"Connection", "Keep-Alive", "X-Private", "Transfer-Encoding", "Te", "Proxy-Authorization",
                           "Content-Length", "Expect"}) {
    CAPTURE(name);
    CHECK_FALSE(hasHeader(out, name));
  }
  CHECK(findHeader(out, "Host") == "up:443");
}

TEST_CASE("Authorization is replaced by the proxy's own bearer token") {
  HeaderList in = {{"Authorization", "Bearer client-token"}};
  CHECK(findHeader(filterRequestHeaders(in, {"u", "proxy-token", ""}), "Authorization") == "Bearer proxy-token");
  CHECK_FALSE(hasHeader(filterRequestHeaders(in, {"u", "", ""}), "Authorization"));
}

TEST_CASE("X-Forwarded-For gains the client address") {
  HeaderList in = {{"X-Forwarded-For", "10.1.1.1"}};
  CHECK(findHeader(filterRequestHeaders(in, {"u", "", "127.0.0.1"}), "X-Forwarded-For") == "10.1.1.1, 127.0.0.1");
}

TEST_CASE("Upgrade requests keep Connection: Upgrade and the Upgrade protocol") {
  HeaderList in = {{"Connection", "Upgrade"}, {"Upgrade", "SPDY/3.1"}, {"X-Stream-Protocol-Version", "v4.channel.k8s.io"}};
  CHECK(isUpgradeRequest(in));
  HeaderList out = filterRequestHeaders(in, {"u", "", ""});
  CHECK(findHeader(out, "Connection") == "Upgrade");
  CHECK(findHeader(out, "Upgrade") == "SPDY/3.1");
  CHECK(findHeader(out, "X-Stream-Protocol-Version") == "v4.channel.k8s.io");
  CHECK_FALSE(isUpgradeRequest({{"Upgrade", "websocket"}}));
  CHECK_FALSE(isUpgradeRequest({{"Connection", "keep-alive"}}));
}

TEST_CASE("Response headers keep apiserver metadata and drop framing") {
  HeaderList in = {{"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}, {"Warning", "299 - \"x\""},
                   {"Audit-Id", "a1"},                   {"Retry-After", "1"},        {"Cache-Control", "no-cache, private"},
                   {"ETag", "\"abc\""},                  {"Transfer-Encoding", "chunked"}, {"Connection", "close"}};
  HeaderList out = filterResponseHeaders(in, false);
  CHECK(out.size() == 7);
  CHECK_FALSE(hasHeader(out, "Transfer-Encoding"));
  CHECK_FALSE(hasHeader(out, "Connection"));
}

TEST_CASE("An upstream proxy's served-by header is not relayed: each hop reports its own") {
  HeaderList in = {{"Content-Type", "application/json"}, {"X-Kube-Cache-Proxy", "cache; rv=19"}, {"Audit-Id", "a1"}};
  HeaderList out = filterResponseHeaders(in, false);
  CHECK(out == HeaderList{{"Content-Type", "application/json"}, {"Audit-Id", "a1"}});
  CHECK_FALSE(hasHeader(filterResponseHeaders({{"x-kube-cache-proxy", "upstream"}}, true), "X-Kube-Cache-Proxy"));
}

TEST_CASE("Message heads are written with the framing of their hop") {
  CHECK(formatRequestHead("GET", "/api?x=1", {{"Host", "h"}}, BodyFraming::None, 0) ==
        "GET /api?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
  CHECK(formatRequestHead("POST", "/a", {}, BodyFraming::ContentLength, 3) ==
        "POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\n");
  CHECK(formatResponseHead(200, "", {}, BodyFraming::Chunked, 0, true) ==
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
  CHECK(formatResponseHead(503, "", {}, BodyFraming::ContentLength, 2, false) ==
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\nConnection: close\r\n\r\n");
}

TEST_CASE("Impersonation headers, in any case, make a request the upstream's to answer (issue 16, finding 7)") {
  CHECK(requestsImpersonation({{"Impersonate-User", "carol"}}));
  CHECK(requestsImpersonation({{"Accept", "*/*"}, {"impersonate-group", "team-a"}}));
  CHECK(requestsImpersonation({{"IMPERSONATE-UID", "1"}}));
  CHECK(requestsImpersonation({{"Impersonate-Extra-Scopes", "view"}}));
  CHECK_FALSE(requestsImpersonation({{"Accept", "application/json"}, {"Authorization", "Bearer x"}}));
  CHECK_FALSE(requestsImpersonation({{"Impersonat", "x"}}));
}
