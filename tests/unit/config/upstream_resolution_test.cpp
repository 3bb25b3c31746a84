// Which upstream wins: --upstream, then a kubeconfig (flag, $KUBECONFIG,
// ~/.kube/config), then the in-cluster service account, else an error.

#include <doctest/doctest.h>

#include "test_support.h"

using config::test::loadArgs;
using config::test::loadError;
using config::test::testPki;

namespace {

std::string kubeconfigFor(const std::string& server) {
  return "current-context: ctx\n"
         "clusters: [{name: c, cluster: {server: '" +
         server +
         "'}}]\n"
         "contexts: [{name: ctx, context: {cluster: c, user: u}}]\n"
         "users: [{name: u, user: {token: kubeconfig-token}}]\n";
}

// A fake pod: service environment variables plus a service-account dir.
config::Environment inPod(const config::test::TempDir& dir) {
  config::Environment env = config::test::emptyEnvironment(dir);
  env.kubernetes_service_host = "10.96.0.1";
  env.kubernetes_service_port = "443";
  dir.write("serviceaccount/token", "sa-token");
  dir.write("serviceaccount/ca.crt", testPki().ca_cert);
  return env;
}

}  // namespace

TEST_CASE("--upstream alone means no credentials, even when a kubeconfig and a pod are around") {
  config::test::TempDir dir;
  config::Environment env = inPod(dir);
  env.kubeconfig = dir.write("kubeconfig", kubeconfigFor("https://elsewhere:6443")).string();
  const auto c = loadArgs({"--upstream", "https://api.example.com:6443/base"}, env);
  CHECK(c.upstream.source == config::UpstreamSource::Flag);
  CHECK(c.upstream.origin == "--upstream");
  CHECK(c.upstream.host == "api.example.com");
  CHECK(c.upstream.port == 6443);
  CHECK(c.upstream.path_prefix == "/base");
  CHECK(c.upstream.bearer_token.empty());
  CHECK(c.upstream.bearer_token_file.empty());
  CHECK(c.upstream.ca_pem.empty());
  CHECK(c.upstream.client_cert_pem.empty());
}

TEST_CASE("--upstream takes its bearer token only from --token-file") {
  config::test::TempDir dir;
  const auto token = dir.write("token", "abc\n");
  const auto c = loadArgs({"--upstream", "http://127.0.0.1:8080", "--token-file", token.string()},
                          config::test::emptyEnvironment(dir));
  CHECK(c.upstream.scheme == "http");
  CHECK(c.upstream.port == 8080);
  CHECK(c.upstream.bearer_token_file == token.string());
}

TEST_CASE("--context next to --upstream is ignored with a warning") {
  config::test::TempDir dir;
  const auto c = loadArgs({"--upstream", "http://127.0.0.1:8080", "--context", "prod"},
                          config::test::emptyEnvironment(dir));
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0] == "--context is ignored: --upstream does not read a kubeconfig");
}

TEST_CASE("An invalid --upstream URL is an error naming the flag") {
  config::test::TempDir dir;
  CHECK(loadError({"--upstream", "ftp://host"}, config::test::emptyEnvironment(dir)) ==
        "kube-cache-proxy: --upstream \"ftp://host\": unsupported scheme \"ftp\" (want http or https)");
}

TEST_CASE("A missing or empty --token-file is an error at start-up") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const auto missing = (dir.path() / "absent").string();
  CHECK(loadError({"--upstream", "http://h", "--token-file", missing}, env) ==
        "kube-cache-proxy: --token-file: cannot read " + missing + ": No such file or directory");
  const auto empty = dir.write("empty", "");
  CHECK(loadError({"--upstream", "http://h", "--token-file", empty.string()}, env) ==
        "kube-cache-proxy: --token-file: " + empty.string() + " is empty");
}

TEST_CASE("$KUBECONFIG is used when --kubeconfig is absent") {
  config::test::TempDir dir;
  config::Environment env = config::test::emptyEnvironment(dir);
  env.kubeconfig = dir.write("a/config", kubeconfigFor("https://from-env:6443")).string();
  const auto c = loadArgs({}, env);
  CHECK(c.upstream.source == config::UpstreamSource::Kubeconfig);
  CHECK(c.upstream.host == "from-env");
  CHECK(c.upstream.bearer_token == "kubeconfig-token");
}

TEST_CASE("A $KUBECONFIG list uses its first existing file") {
  config::test::TempDir dir;
  config::Environment env = config::test::emptyEnvironment(dir);
  const auto first = dir.write("first", kubeconfigFor("https://first:6443")).string();
  const auto second = dir.write("second", kubeconfigFor("https://second:6443")).string();
  const auto missing = (dir.path() / "missing").string();

  env.kubeconfig = first + ":" + second;
  CHECK(loadArgs({}, env).upstream.host == "first");
  // kubectl skips list entries that do not exist, and so do we.
  env.kubeconfig = ":" + missing + ":" + second;
  CHECK(loadArgs({}, env).upstream.host == "second");
}

TEST_CASE("A $KUBECONFIG naming no existing file falls through to in-cluster") {
  config::test::TempDir dir;
  config::Environment env = inPod(dir);
  env.kubeconfig = (dir.path() / "missing").string();
  CHECK(loadArgs({}, env).upstream.source == config::UpstreamSource::InCluster);
}

TEST_CASE("--kubeconfig wins over $KUBECONFIG, which wins over ~/.kube/config") {
  config::test::TempDir dir;
  config::Environment env = config::test::emptyEnvironment(dir);
  env.home = (dir.path() / "home").string();
  dir.write("home/.kube/config", kubeconfigFor("https://from-home:6443"));
  CHECK(loadArgs({}, env).upstream.host == "from-home");

  env.kubeconfig = dir.write("env-config", kubeconfigFor("https://from-env:6443")).string();
  CHECK(loadArgs({}, env).upstream.host == "from-env");

  const auto flag = dir.write("flag-config", kubeconfigFor("https://from-flag:6443"));
  CHECK(loadArgs({"--kubeconfig", flag.string()}, env).upstream.host == "from-flag");
}

TEST_CASE("A kubeconfig wins over the in-cluster service account") {
  config::test::TempDir dir;
  config::Environment env = inPod(dir);
  env.home = (dir.path() / "home").string();
  dir.write("home/.kube/config", kubeconfigFor("https://from-home:6443"));
  CHECK(loadArgs({}, env).upstream.source == config::UpstreamSource::Kubeconfig);
}

TEST_CASE("--context without any kubeconfig is an error rather than a silent in-cluster start") {
  config::test::TempDir dir;
  CHECK(loadError({"--context", "prod"}, inPod(dir)) ==
        "kube-cache-proxy: --context \"prod\": no kubeconfig found ($KUBECONFIG and ~/.kube/config are absent)");
}

TEST_CASE("With no upstream anywhere, the error says how to provide one") {
  config::test::TempDir dir;
  config::Environment env = config::test::emptyEnvironment(dir);
  env.home = (dir.path() / "empty-home").string();
  CHECK(loadError({}, env) ==
        "kube-cache-proxy: no upstream apiserver: pass --upstream or --kubeconfig, or run in a pod "
        "(KUBERNETES_SERVICE_HOST is not set)");
}
