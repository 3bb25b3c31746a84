#include "proxy/upstream/upstream_url.h"

#include <doctest/doctest.h>

using proxy::parseHostPort;
using proxy::parseUpstreamUrl;
using proxy::UpstreamOptions;

TEST_CASE("Upstream URLs give scheme, host, port and path prefix") {
  UpstreamOptions o;
  CHECK(parseUpstreamUrl("https://10.0.0.1:6443", o) == "");
  CHECK(o.scheme == "https");
  CHECK(o.host == "10.0.0.1");
  CHECK(o.port == 6443);
  CHECK(o.path_prefix == "");

  CHECK(parseUpstreamUrl("https://kubernetes.default.svc", o) == "");
  CHECK(o.port == 443);
  CHECK(parseUpstreamUrl("http://[::1]:8080/k8s/clusters/c-1/", o) == "");
  CHECK(o.host == "::1");
  CHECK(o.port == 8080);
  CHECK(o.path_prefix == "/k8s/clusters/c-1");
  CHECK(parseUpstreamUrl("http://[::1]", o) == "");
  CHECK(o.host == "::1");
  CHECK(o.port == 80);
}

TEST_CASE("Malformed upstream URLs are rejected with a message") {
  UpstreamOptions o;
  CHECK(parseUpstreamUrl("10.0.0.1:6443", o) != "");
  CHECK(parseUpstreamUrl("ftp://x", o) != "");
  CHECK(parseUpstreamUrl("https://:6443", o) != "");
  CHECK(parseUpstreamUrl("https://h:99999", o) != "");
}

TEST_CASE("Listen addresses split into host and port") {
  std::string host;
  uint16_t port = 1;
  CHECK(parseHostPort("127.0.0.1:0", host, port) == "");
  CHECK(host == "127.0.0.1");
  CHECK(port == 0);
  CHECK(parseHostPort("[::1]:8443", host, port) == "");
  CHECK(host == "::1");
  CHECK(port == 8443);
  CHECK(parseHostPort("localhost", host, port) != "");
  CHECK(parseHostPort("h:x", host, port) != "");
}
