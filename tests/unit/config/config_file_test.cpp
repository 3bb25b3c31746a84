// The YAML --config file: every flag as a key, precedence, relative paths and
// the errors a hand-edited file can produce.

#include <doctest/doctest.h>

#include "test_support.h"

using namespace std::chrono_literals;
using config::test::loadArgs;
using config::test::loadError;

TEST_CASE("Every flag can be set in the config file") {
  config::test::TempDir dir;
  dir.write("token", "file-token\n");
  const auto file = dir.write("proxy.yaml", R"(
listen: "127.0.0.1:9001"
upstream: http://127.0.0.1:6443/prefix
token-file: token
log-format: json
v: 7
io-threads: 3
shutdown-timeout: 1m30s
cache: [pods, configmaps, deployments.apps]
no-cache: secrets
write-sync: true
state-dir: /var/lib/kcp
mode: gateway
)");
  const auto c = loadArgs({"--config", file.string()}, config::test::emptyEnvironment(dir));
  CHECK(c.listen == config::ListenAddress{"127.0.0.1", 9001});
  CHECK(c.upstream.scheme == "http");
  CHECK(c.upstream.port == 6443);
  CHECK(c.upstream.path_prefix == "/prefix");
  CHECK(c.upstream.bearer_token_file == (dir.path() / "token").string());
  CHECK(c.log_format == config::LogFormat::Json);
  CHECK(c.verbosity == 7);
  CHECK(c.io_threads == 3);
  CHECK(c.shutdown_timeout == 90s);
  REQUIRE(c.cache.size() == 3);
  CHECK(c.cache[2] == config::GroupResource{"deployments", "apps"});
  REQUIRE(c.no_cache.size() == 1);
  CHECK(c.no_cache[0] == config::GroupResource{"secrets", ""});
  CHECK(c.write_sync);
  CHECK(c.state_dir == "/var/lib/kcp");
  CHECK(c.mode == config::Mode::Gateway);
}

TEST_CASE("Flags win over the config file, and a list flag replaces the file's list") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", R"(
upstream: http://127.0.0.1:6443
listen: 127.0.0.1:9001
log-format: json
cache: [pods, configmaps]
write-sync: true
)");
  const auto c = loadArgs({"--listen", "127.0.0.1:9002", "--config", file.string(), "--cache", "secrets",
                           "--write-sync=false"},
                          config::test::emptyEnvironment(dir));
  CHECK(c.listen.port == 9002);
  CHECK(c.log_format == config::LogFormat::Json);
  REQUIRE(c.cache.size() == 1);
  CHECK(c.cache[0].resource == "secrets");
  CHECK_FALSE(c.write_sync);
}

TEST_CASE("--kubeconfig or --context on the command line beats an upstream from the config file") {
  config::test::TempDir dir;
  const auto kubeconfig = dir.write("kubeconfig", R"(
current-context: a
clusters: [{name: c, cluster: {server: "https://from-kubeconfig:6443"}}]
contexts: [{name: a, context: {cluster: c}}, {name: b, context: {cluster: c}}]
)");
  const auto file = dir.write("proxy.yaml", "upstream: http://from-file:8080\nkubeconfig: " + kubeconfig.string() + "\n");
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs({"--config", file.string()}, env).upstream.host == "from-file");
  CHECK(loadArgs({"--config", file.string(), "--kubeconfig", kubeconfig.string()}, env).upstream.host ==
        "from-kubeconfig");
  const auto with_context = loadArgs({"--config", file.string(), "--context", "b"}, env);
  CHECK(with_context.upstream.host == "from-kubeconfig");
  CHECK(with_context.upstream.origin.find("context \"b\"") != std::string::npos);
  CHECK(loadArgs({"--config", file.string(), "--upstream", "http://from-flag"}, env).upstream.host == "from-flag");
}

TEST_CASE("Lists in the config file may be YAML sequences or comma-separated strings") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", "upstream: http://127.0.0.1:6443\ncache: pods, configmaps\n"
                                            "no-cache:\n  - secrets,leases.coordination.k8s.io\n");
  const auto c = loadArgs({"--config", file.string()}, config::test::emptyEnvironment(dir));
  REQUIRE(c.cache.size() == 2);
  CHECK(c.cache[1].resource == "configmaps");
  REQUIRE(c.no_cache.size() == 2);
  CHECK(c.no_cache[1] == config::GroupResource{"leases", "coordination.k8s.io"});
}

TEST_CASE("YAML's own boolean spellings work for write-sync in the config file") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", "upstream: http://127.0.0.1:6443\nwrite-sync: yes\n");
  CHECK(loadArgs({"--config", file.string()}, config::test::emptyEnvironment(dir)).write_sync);
}

TEST_CASE("Relative paths in the config file resolve against the file's directory") {
  config::test::TempDir dir;
  dir.write("etc/kcp/kubeconfig", R"(
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)");
  dir.write("etc/kcp/secrets/token", "abc");
  const auto file = dir.write("etc/kcp/proxy.yaml", "kubeconfig: kubeconfig\ntoken-file: secrets/token\n"
                                                    "state-dir: state\n");
  const auto c = loadArgs({"--config", file.string()}, config::test::emptyEnvironment(dir));
  CHECK(c.upstream.source == config::UpstreamSource::Kubeconfig);
  CHECK(c.upstream.host == "10.0.0.1");
  CHECK(c.upstream.bearer_token_file == (dir.path() / "etc/kcp/secrets/token").string());
  CHECK(c.state_dir == (dir.path() / "etc/kcp/state").string());
}

TEST_CASE("An empty config file changes nothing, and a null value leaves the default") {
  config::test::TempDir dir;
  const auto empty = dir.write("empty.yaml", "");
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs({"--config", empty.string(), "--upstream", "http://127.0.0.1:1"}, env).listen.port == 8001);
  const auto nulls = dir.write("nulls.yaml", "upstream: http://127.0.0.1:1\nlisten:\nmode: ~\n");
  CHECK(loadArgs({"--config", nulls.string()}, env).listen.port == 8001);
}

TEST_CASE("Bad values in the config file name the file and the key") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", "upstream: http://127.0.0.1:6443\nlog-format: xml\n");
  CHECK(loadError({"--config", file.string()}, config::test::emptyEnvironment(dir)) ==
        "kube-cache-proxy: " + file.string() + ": log-format \"xml\": want text or json");
}

TEST_CASE("Malformed YAML in the config file is reported with its line") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", "listen: 127.0.0.1:8001\ncache: [pods, configmaps\n");
  const std::string error = loadError({"--config", file.string()}, config::test::emptyEnvironment(dir));
  CHECK(error.rfind("kube-cache-proxy: config file " + file.string() + ": malformed YAML at line ", 0) == 0);
  CHECK(error.find('\n') == std::string::npos);
}

TEST_CASE("Unknown keys in the config file are errors, so typos do not pass silently") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const auto typo = dir.write("typo.yaml", "upstream: http://127.0.0.1:6443\nlisten-address: :8001\n");
  CHECK(loadError({"--config", typo.string()}, env) ==
        "kube-cache-proxy: config file " + typo.string() + ": unknown key \"listen-address\"");
  const auto nested = dir.write("nested.yaml", "config: other.yaml\n");
  CHECK(loadError({"--config", nested.string()}, env) ==
        "kube-cache-proxy: config file " + nested.string() + ": unknown key \"config\" (config files do not nest)");
}

TEST_CASE("The config file must be a mapping of scalar or list values") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const auto list = dir.write("list.yaml", "- listen\n- upstream\n");
  CHECK(loadError({"--config", list.string()}, env) ==
        "kube-cache-proxy: config file " + list.string() + ": want a mapping of flag names to values");
  const auto map_value = dir.write("map.yaml", "listen: {host: 127.0.0.1}\n");
  CHECK(loadError({"--config", map_value.string()}, env) ==
        "kube-cache-proxy: " + map_value.string() + ": listen: want a single value");
  const auto nested_list = dir.write("nested_list.yaml", "cache: [[pods]]\n");
  CHECK(loadError({"--config", nested_list.string()}, env) ==
        "kube-cache-proxy: " + nested_list.string() + ": cache: list entries must be plain strings");
}

TEST_CASE("An unreadable config file is a one-line error naming the path") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const auto missing = (dir.path() / "missing.yaml").string();
  CHECK(loadError({"--config", missing}, env) ==
        "kube-cache-proxy: --config: cannot read " + missing + ": No such file or directory");
  CHECK(loadError({"--config", dir.path().string()}, env) ==
        "kube-cache-proxy: --config: cannot read " + dir.path().string() + ": is a directory");
}
