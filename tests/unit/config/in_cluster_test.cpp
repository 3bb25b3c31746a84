// In-cluster detection with a fake service-account directory.

#include <doctest/doctest.h>

#include <cstdlib>

#include "test_support.h"

using config::test::loadArgs;
using config::test::loadError;
using config::test::testPki;

namespace {

config::Environment podEnvironment(const config::test::TempDir& dir, const char* host = "10.96.0.1",
                                   const char* port = "443") {
  config::Environment env = config::test::emptyEnvironment(dir);
  env.kubernetes_service_host = host;
  env.kubernetes_service_port = port;
  return env;
}

}  // namespace

TEST_CASE("In a pod the upstream is the kubernetes Service with the service account's token file and CA") {
  config::test::TempDir dir;
  dir.write("serviceaccount/token", "sa-token");
  dir.write("serviceaccount/ca.crt", testPki().ca_cert);
  const auto c = loadArgs({}, podEnvironment(dir, "10.96.0.1", "6443"));
  CHECK(c.upstream.source == config::UpstreamSource::InCluster);
  CHECK(c.upstream.scheme == "https");
  CHECK(c.upstream.host == "10.96.0.1");
  CHECK(c.upstream.port == 6443);
  CHECK(c.upstream.path_prefix.empty());
  // A file, not its contents: projected tokens rotate and must be re-read.
  CHECK(c.upstream.bearer_token.empty());
  CHECK(c.upstream.bearer_token_file == (dir.path() / "serviceaccount/token").string());
  CHECK(c.upstream.ca_pem == testPki().ca_cert);
  CHECK(c.warnings.empty());
}

TEST_CASE("An IPv6 service host is kept as a bare literal") {
  config::test::TempDir dir;
  dir.write("serviceaccount/token", "sa-token");
  dir.write("serviceaccount/ca.crt", testPki().ca_cert);
  CHECK(loadArgs({}, podEnvironment(dir, "fd00:10:96::1")).upstream.host == "fd00:10:96::1");
}

TEST_CASE("Without ca.crt the in-cluster upstream uses the system roots and says so") {
  config::test::TempDir dir;
  dir.write("serviceaccount/token", "sa-token");
  const auto c = loadArgs({}, podEnvironment(dir));
  CHECK(c.upstream.ca_pem.empty());
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0].find("ca.crt does not exist") != std::string::npos);
}

TEST_CASE("In a pod, a missing, empty or unusable service account is an error") {
  config::test::TempDir dir;
  const auto env = podEnvironment(dir);
  const auto token = (dir.path() / "serviceaccount/token").string();
  CHECK(loadError({}, env) == "kube-cache-proxy: in-cluster service account token: cannot read " + token +
                                  ": No such file or directory");
  dir.write("serviceaccount/token", "");
  CHECK(loadError({}, env) == "kube-cache-proxy: in-cluster service account token: " + token + " is empty");
  dir.write("serviceaccount/token", "sa-token");
  dir.write("serviceaccount/ca.crt", "not a certificate");
  CHECK(loadError({}, env) == "kube-cache-proxy: in-cluster service account CA " +
                                  (dir.path() / "serviceaccount/ca.crt").string() + ": no PEM certificate found");
}

TEST_CASE("A malformed KUBERNETES_SERVICE_PORT is an error") {
  config::test::TempDir dir;
  dir.write("serviceaccount/token", "sa-token");
  CHECK(loadError({}, podEnvironment(dir, "10.96.0.1", "https")) ==
        "kube-cache-proxy: in-cluster: KUBERNETES_SERVICE_PORT \"https\": invalid port \"https\"");
}

TEST_CASE("Only both service variables together mean running in a pod") {
  config::test::TempDir dir;
  dir.write("serviceaccount/token", "sa-token");
  config::Environment env = podEnvironment(dir);
  env.kubernetes_service_port.reset();
  CHECK(loadError({}, env).find("no upstream apiserver") != std::string::npos);
  env = podEnvironment(dir);
  env.kubernetes_service_host = "";
  CHECK(loadError({}, env).find("no upstream apiserver") != std::string::npos);
}

TEST_CASE("--token-file replaces the service account token in a pod") {
  config::test::TempDir dir;
  dir.write("serviceaccount/token", "sa-token");
  const auto token = dir.write("other-token", "other");
  const auto c = loadArgs({"--token-file", token.string()}, podEnvironment(dir));
  CHECK(c.upstream.source == config::UpstreamSource::InCluster);
  CHECK(c.upstream.bearer_token_file == token.string());
}

TEST_CASE("The process environment is read from the real variables") {
  // Only checks the mapping of names; the values are whatever this process has.
  const config::Environment env = config::Environment::fromProcess();
  CHECK(env.service_account_dir == "/var/run/secrets/kubernetes.io/serviceaccount");
  CHECK(env.home.has_value() == (std::getenv("HOME") != nullptr));
  CHECK(env.kubeconfig.has_value() == (std::getenv("KUBECONFIG") != nullptr));
}
