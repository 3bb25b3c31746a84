#include "config/server_url.h"

#include <doctest/doctest.h>

#include <stdexcept>

using config::parseServerUrl;

TEST_CASE("Server URLs default their port from the scheme") {
  const auto https = parseServerUrl("https://api.example.com");
  CHECK(https.scheme == "https");
  CHECK(https.host == "api.example.com");
  CHECK(https.port == 443);
  CHECK(https.path_prefix.empty());

  const auto http = parseServerUrl("http://localhost");
  CHECK(http.scheme == "http");
  CHECK(http.port == 80);
}

TEST_CASE("Server URLs keep an explicit port and lower-case the scheme") {
  const auto url = parseServerUrl("HTTPS://10.0.0.1:6443");
  CHECK(url.scheme == "https");
  CHECK(url.host == "10.0.0.1");
  CHECK(url.port == 6443);
}

TEST_CASE("An empty port after the colon means the default port, as in Go") {
  CHECK(parseServerUrl("https://host:").port == 443);
}

TEST_CASE("IPv6 literals are written in brackets and stored without them") {
  const auto url = parseServerUrl("https://[fd00::1]:6443/");
  CHECK(url.host == "fd00::1");
  CHECK(url.port == 6443);
  CHECK(parseServerUrl("http://[::1]").port == 80);
  CHECK_THROWS_WITH_AS(parseServerUrl("https://fd00::1:6443"),
                       "IPv6 literal must be in brackets, e.g. https://[::1]:6443", std::invalid_argument);
  CHECK_THROWS_AS(parseServerUrl("https://[fd00::1"), std::invalid_argument);
  CHECK_THROWS_AS(parseServerUrl("https://[not-an-ip]:6443"), std::invalid_argument);
  CHECK_THROWS_AS(parseServerUrl("https://[::1]x"), std::invalid_argument);
}

TEST_CASE("A path prefix is kept without its trailing slash") {
  CHECK(parseServerUrl("https://rancher.example.com/k8s/clusters/c-1").path_prefix == "/k8s/clusters/c-1");
  CHECK(parseServerUrl("https://rancher.example.com/k8s/clusters/c-1/").path_prefix == "/k8s/clusters/c-1");
  CHECK(parseServerUrl("https://host:8443/").path_prefix.empty());
}

TEST_CASE("Server URLs without a usable scheme, host or port are rejected") {
  CHECK_THROWS_WITH_AS(parseServerUrl("localhost:8080"), "URL needs a scheme (http:// or https://)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseServerUrl("ftp://host"), "unsupported scheme \"ftp\" (want http or https)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseServerUrl("https://"), "URL has no host", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseServerUrl("https://:6443"), "URL has no host", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseServerUrl("https://host:0"), "port \"0\" is out of range", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseServerUrl("https://host:65536"), "port \"65536\" is out of range",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseServerUrl("https://host:https"), "invalid port \"https\"", std::invalid_argument);
  CHECK_THROWS_AS(parseServerUrl("https://ho st"), std::invalid_argument);
}

TEST_CASE("Server URLs with credentials, a query or a fragment are rejected") {
  CHECK_THROWS_WITH_AS(parseServerUrl("https://admin:secret@host"), "credentials in the URL are not supported",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseServerUrl("https://host/?x=1"), "URL must not have a query or fragment",
                       std::invalid_argument);
  CHECK_THROWS_AS(parseServerUrl("https://host#frag"), std::invalid_argument);
}

TEST_CASE("Host and port are joined with brackets around IPv6 literals") {
  CHECK(config::joinHostPort("127.0.0.1", 8001) == "127.0.0.1:8001");
  CHECK(config::joinHostPort("::1", 8001) == "[::1]:8001");
}
