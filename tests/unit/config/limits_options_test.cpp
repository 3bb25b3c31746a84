// Request limits: defaults are kube-apiserver's; flags and config-file keys set them.

#include <doctest/doctest.h>

#include "test_support.h"

using namespace std::chrono_literals;
using config::test::loadArgs;
using config::test::loadError;

TEST_CASE("Limits default to the apiserver's: 3 MiB bodies, 1 MiB heads, 32 s heads, 90 s idle, watches unbounded") {
  config::test::TempDir dir;
  const auto c = loadArgs({"--upstream", "http://127.0.0.1:6443"}, config::test::emptyEnvironment(dir));
  CHECK(c.max_request_body_bytes == 3145728);
  CHECK(c.max_header_bytes == 1048576);
  CHECK(c.read_header_timeout == 32s);
  CHECK(c.idle_timeout == 90s);
  CHECK(c.max_watches_per_client == 0);
  CHECK(c.max_inflight_watches == 0);
  CHECK(c.max_requests_inflight == 600);  // 400 + 200, the apiserver's two in-flight bounds
  CHECK(c.max_inflight_reviews == 64);
  CHECK_FALSE(c.max_connections.has_value());  // from the descriptor limit
  CHECK(c.max_connections_per_client == 0);
}

TEST_CASE("Connection, request and review bounds are read from flags and the config file (issue 16, finding 8)") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", R"(
upstream: http://127.0.0.1:6443
max-connections: 5000
max-connections-per-client: 100
)");
  const auto c = loadArgs({"--config", file.string(), "--max-requests-inflight", "0", "--max-inflight-reviews", "8"},
                          config::test::emptyEnvironment(dir));
  CHECK(c.max_connections == 5000u);
  CHECK(c.max_connections_per_client == 100);
  CHECK(c.max_requests_inflight == 0);
  CHECK(c.max_inflight_reviews == 8);
}

TEST_CASE("Limits are read from flags and from the config file, flags winning") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", R"(
upstream: http://127.0.0.1:6443
max-request-body-bytes: 1000
max-watches-per-client: 7
idle-timeout: 5m
)");
  const auto c = loadArgs({"--config", file.string(), "--max-header-bytes", "8192", "--read-header-timeout", "2s",
                           "--max-inflight-watches", "900", "--max-watches-per-client", "9"},
                          config::test::emptyEnvironment(dir));
  CHECK(c.max_request_body_bytes == 1000);
  CHECK(c.max_header_bytes == 8192);
  CHECK(c.read_header_timeout == 2s);
  CHECK(c.idle_timeout == 5min);
  CHECK(c.max_watches_per_client == 9);
  CHECK(c.max_inflight_watches == 900);
}

TEST_CASE("Bad limits name their flag") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const auto error = [&](const char* flag, const char* value) {
    return loadError({"--upstream", "http://127.0.0.1:6443", flag, value}, env);
  };
  CHECK(error("--max-request-body-bytes", "3MiB").find("--max-request-body-bytes \"3MiB\": want a whole number") !=
        std::string::npos);
  CHECK(error("--max-watches-per-client", "-1").find("--max-watches-per-client") != std::string::npos);
  CHECK(error("--max-header-bytes", "0").find("--max-header-bytes \"0\": want a positive number") != std::string::npos);
  CHECK(error("--read-header-timeout", "0s").find("--read-header-timeout \"0s\": must be positive") != std::string::npos);
  CHECK(error("--idle-timeout", "soon").find("--idle-timeout") != std::string::npos);
}
