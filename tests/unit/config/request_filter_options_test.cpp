// kubectl proxy's request filter flags: defaults per mode, flags and config file, and
// patterns that do not compile refused at start-up.

#include <doctest/doctest.h>

#include "test_support.h"

using config::test::loadArgs;
using config::test::loadError;
using Names = std::vector<std::string>;

namespace {
const Names kKubectlHosts = {"^localhost$", "^127\\.0\\.0\\.1$", "^\\[::1\\]$"};
}

TEST_CASE("A sidecar filters requests with kubectl proxy's defaults") {
  config::test::TempDir dir;
  const auto c = loadArgs({"--upstream", "http://127.0.0.1:6443"}, config::test::emptyEnvironment(dir));
  CHECK(c.request_filter.accept_hosts == kKubectlHosts);
  CHECK(c.request_filter.accept_paths == Names{"^.*"});
  CHECK(c.request_filter.reject_paths == Names{"^/api/.*/pods/.*/exec", "^/api/.*/pods/.*/attach"});
  CHECK(c.request_filter.reject_methods == Names{"^$"});
}

TEST_CASE("A sidecar on another loopback address also accepts that address as Host") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  Names expected = kKubectlHosts;
  expected.push_back("^127\\.0\\.0\\.2$");
  CHECK(loadArgs({"--upstream", "http://127.0.0.1:6443", "--listen", "127.0.0.2:0"}, env).request_filter.accept_hosts ==
        expected);
  CHECK(loadArgs({"--upstream", "http://127.0.0.1:6443", "--listen", "[::1]:0"}, env).request_filter.accept_hosts ==
        kKubectlHosts);
  CHECK(loadArgs({"--upstream", "http://127.0.0.1:6443", "--listen", "localhost:0"}, env).request_filter.accept_hosts ==
        kKubectlHosts);
}

TEST_CASE("A gateway does not filter unless its operator sets a flag, and then only that check") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const auto off = loadArgs({"--upstream", "http://127.0.0.1:6443", "--mode", "gateway"}, env);
  CHECK(off.request_filter == config::RequestFilterConfig{});
  const auto methods =
      loadArgs({"--upstream", "http://127.0.0.1:6443", "--mode", "gateway", "--reject-methods", "POST,PUT"}, env);
  CHECK(methods.request_filter.reject_methods == Names{"POST", "PUT"});
  CHECK_FALSE(methods.request_filter.accept_hosts.has_value());
  CHECK_FALSE(methods.request_filter.accept_paths.has_value());
  CHECK_FALSE(methods.request_filter.reject_paths.has_value());
}

TEST_CASE("The filter flags are comma-separated; \"\" is the empty list, as in kubectl") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const auto c = loadArgs({"--upstream", "http://127.0.0.1:6443", "--accept-hosts", "^a$,^b\\.example$",
                           "--reject-paths=", "--reject-methods", ""},
                          env);
  CHECK(c.request_filter.accept_hosts == Names{"^a$", "^b\\.example$"});
  CHECK(c.request_filter.reject_paths == Names{});
  CHECK(c.request_filter.reject_methods == Names{});
  CHECK(c.request_filter.accept_paths == Names{"^.*"});
}

TEST_CASE("The filter lists are read from the config file, as lists or comma-separated, flags winning") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", R"(
upstream: http://127.0.0.1:6443
accept-hosts: ['^localhost$', '^kcp\.local$']
reject-paths: "^/api/.*/pods/.*/exec,^/api/.*/pods/.*/portforward"
reject-methods: [POST]
)");
  const auto c = loadArgs({"--config", file.string(), "--reject-methods", "DELETE"}, config::test::emptyEnvironment(dir));
  CHECK(c.request_filter.accept_hosts == Names{"^localhost$", "^kcp\\.local$"});
  CHECK(c.request_filter.reject_paths == Names{"^/api/.*/pods/.*/exec", "^/api/.*/pods/.*/portforward"});
  CHECK(c.request_filter.reject_methods == Names{"DELETE"});
}

TEST_CASE("A pattern that does not compile is a start-up error naming the flag and the pattern") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const std::string bad = loadError({"--upstream", "http://127.0.0.1:6443", "--accept-hosts", "^localhost$,^(evil"}, env);
  CHECK(bad.find("--accept-hosts \"^(evil\": not a regular expression") != std::string::npos);
  CHECK(loadError({"--upstream", "http://127.0.0.1:6443", "--reject-paths", "(a)\\1"}, env).find("back-references") !=
        std::string::npos);
  // Go's inline flags are not ECMAScript: refused rather than read differently.
  CHECK(loadError({"--upstream", "http://127.0.0.1:6443", "--accept-paths", "(?i)^/api"}, env)
            .find("--accept-paths \"(?i)^/api\": not a regular expression") != std::string::npos);
  // A gateway checks its patterns too.
  CHECK(loadError({"--upstream", "http://127.0.0.1:6443", "--mode", "gateway", "--reject-methods", "["}, env)
            .find("--reject-methods \"[\"") != std::string::npos);
  const auto file = dir.write("bad.yaml", "upstream: http://127.0.0.1:6443\naccept-paths: ['^/api', '*']\n");
  CHECK(loadError({"--config", file.string()}, env).find(file.string() + ": accept-paths \"*\"") != std::string::npos);
}

TEST_CASE("Empty entries in a filter list are dropped: kubectl would compile each to match everything") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs({"--upstream", "http://127.0.0.1:6443", "--accept-hosts", "^localhost$,,"}, env)
            .request_filter.accept_hosts == Names{"^localhost$"});
  const auto file = dir.write("empty.yaml", "upstream: http://127.0.0.1:6443\nreject-paths: '^/a,,^/b,'\n");
  CHECK(loadArgs({"--config", file.string()}, env).request_filter.reject_paths == Names{"^/a", "^/b"});
}
