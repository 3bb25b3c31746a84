// kubeconfig reading: every cluster and user field the proxy honours, and a
// clear start-up error for each one it cannot.

#include <doctest/doctest.h>

#include "test_support.h"

using config::test::loadArgs;
using config::test::loadError;
using config::test::testPki;

namespace {

// A kubeconfig with one context "ctx" joining cluster "c" and user "u".
std::string kubeconfigWith(const std::string& cluster_fields, const std::string& user_fields) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
         "clusters:\n- name: c\n  cluster:\n" +
         cluster_fields +
         "contexts:\n- name: ctx\n  context:\n    cluster: c\n    user: u\n    namespace: default\n"
         "users:\n- name: u\n  user:\n" +
         user_fields;
}

const std::string kServer = "    server: https://10.0.0.1:6443\n";

// Loads `kubeconfig_text` written to a temp file; returns the Config.
struct Fixture {
  config::test::TempDir dir;
  std::filesystem::path path;

  explicit Fixture(const std::string& kubeconfig_text) { path = dir.write("kube/config", kubeconfig_text); }
  config::Config load(std::vector<std::string> extra = {}) const {
    extra.insert(extra.begin(), {"--kubeconfig", path.string()});
    return loadArgs(extra, config::test::emptyEnvironment(dir));
  }
  std::string error(std::vector<std::string> extra = {}) const {
    extra.insert(extra.begin(), {"--kubeconfig", path.string()});
    return loadError(extra, config::test::emptyEnvironment(dir));
  }
  std::string prefix() const { return "kube-cache-proxy: kubeconfig " + path.string() + ": "; }
};

std::string indentedData(const char* key, const std::string& pem) {
  return std::string("    ") + key + ": " + config::test::encodeBase64(pem) + "\n";
}

}  // namespace

TEST_CASE("A kubeconfig's server, CA file, client certificate files and token reach the upstream") {
  Fixture f(kubeconfigWith(kServer + "    certificate-authority: pki/ca.crt\n    tls-server-name: kubernetes\n",
                           "    client-certificate: pki/admin.crt\n    client-key: pki/admin.key\n"
                           "    token: static-token\n"));
  f.dir.write("kube/pki/ca.crt", testPki().ca_cert);
  f.dir.write("kube/pki/admin.crt", testPki().client_cert);
  f.dir.write("kube/pki/admin.key", testPki().client_key);
  const auto c = f.load();
  CHECK(c.upstream.source == config::UpstreamSource::Kubeconfig);
  CHECK(c.upstream.origin == "kubeconfig " + f.path.string() + ", context \"ctx\"");
  CHECK(c.upstream.scheme == "https");
  CHECK(c.upstream.host == "10.0.0.1");
  CHECK(c.upstream.port == 6443);
  CHECK(c.upstream.path_prefix.empty());
  CHECK(c.upstream.ca_pem == testPki().ca_cert);
  CHECK(c.upstream.tls_server_name == "kubernetes");
  CHECK_FALSE(c.upstream.insecure_skip_tls_verify);
  CHECK(c.upstream.client_cert_pem == testPki().client_cert);
  CHECK(c.upstream.client_key_pem == testPki().client_key);
  CHECK(c.upstream.bearer_token == "static-token");
  CHECK(c.upstream.bearer_token_file.empty());
}

TEST_CASE("Base64 -data fields carry the CA, client certificate and key inline") {
  Fixture f(kubeconfigWith(kServer + indentedData("certificate-authority-data", testPki().ca_cert),
                           indentedData("client-certificate-data", testPki().client_cert) +
                               indentedData("client-key-data", testPki().client_key)));
  const auto c = f.load();
  CHECK(c.upstream.ca_pem == testPki().ca_cert);
  CHECK(c.upstream.client_cert_pem == testPki().client_cert);
  CHECK(c.upstream.client_key_pem == testPki().client_key);
}

TEST_CASE("A plain-http server with a path prefix and no user is accepted") {
  Fixture f(
      "clusters: [{name: c, cluster: {server: 'http://[::1]:8080/k8s/clusters/c-1/'}}]\n"
      "contexts: [{name: ctx, context: {cluster: c}}]\ncurrent-context: ctx\n");
  const auto c = f.load();
  CHECK(c.upstream.scheme == "http");
  CHECK(c.upstream.host == "::1");
  CHECK(c.upstream.port == 8080);
  CHECK(c.upstream.path_prefix == "/k8s/clusters/c-1");
  CHECK(c.upstream.bearer_token.empty());
  CHECK(c.upstream.client_cert_pem.empty());
}

TEST_CASE("--context picks a context other than current-context") {
  Fixture f(R"(
current-context: dev
clusters:
- {name: dev, cluster: {server: "https://dev.example.com"}}
- {name: prod, cluster: {server: "https://prod.example.com:8443"}}
contexts:
- {name: dev, context: {cluster: dev}}
- {name: prod, context: {cluster: prod}}
)");
  CHECK(f.load().upstream.host == "dev.example.com");
  const auto prod = f.load({"--context", "prod"});
  CHECK(prod.upstream.host == "prod.example.com");
  CHECK(prod.upstream.port == 8443);
  CHECK(prod.upstream.origin.find("context \"prod\"") != std::string::npos);
}

TEST_CASE("A missing context is named with the flag or key that asked for it") {
  Fixture f(kubeconfigWith(kServer, "    token: t\n"));
  CHECK(f.error({"--context", "prod"}) ==
        "kube-cache-proxy: --context \"prod\": no such context in " + f.path.string());
  Fixture dangling("current-context: gone\ncontexts: []\n");
  CHECK(dangling.error() ==
        "kube-cache-proxy: current-context \"gone\": no such context in " + dangling.path.string());
  Fixture none("clusters: []\n");
  CHECK(none.error() == none.prefix() + "no current-context is set; pass --context");
}

TEST_CASE("A context must name an existing cluster, and its user must exist") {
  Fixture no_cluster("current-context: ctx\ncontexts: [{name: ctx, context: {user: u}}]\n");
  CHECK(no_cluster.error() == no_cluster.prefix() + "context \"ctx\": cluster is not set");
  Fixture unknown_cluster("current-context: ctx\ncontexts: [{name: ctx, context: {cluster: nope}}]\n");
  CHECK(unknown_cluster.error() == unknown_cluster.prefix() + "cluster \"nope\": no such cluster");
  Fixture unknown_user(
      "current-context: ctx\nclusters: [{name: c, cluster: {server: 'https://h'}}]\n"
      "contexts: [{name: ctx, context: {cluster: c, user: ghost}}]\n");
  CHECK(unknown_user.error() == unknown_user.prefix() + "user \"ghost\": no such user");
}

TEST_CASE("A cluster needs a valid server URL") {
  Fixture missing(kubeconfigWith("    insecure-skip-tls-verify: true\n", "    token: t\n"));
  CHECK(missing.error() == missing.prefix() + "cluster \"c\": server is not set");
  Fixture bad(kubeconfigWith("    server: 10.0.0.1:6443\n", "    token: t\n"));
  CHECK(bad.error() ==
        bad.prefix() + "cluster \"c\": server \"10.0.0.1:6443\": URL needs a scheme (http:// or https://)");
}

TEST_CASE("insecure-skip-tls-verify is carried, but not together with a CA") {
  Fixture insecure(kubeconfigWith(kServer + "    insecure-skip-tls-verify: true\n", "    token: t\n"));
  CHECK(insecure.load().upstream.insecure_skip_tls_verify);
  Fixture both(kubeconfigWith(kServer + "    insecure-skip-tls-verify: true\n" +
                                  indentedData("certificate-authority-data", testPki().ca_cert),
                              "    token: t\n"));
  CHECK(both.error() ==
        both.prefix() + "cluster \"c\": insecure-skip-tls-verify cannot be combined with a certificate authority");
  Fixture not_bool(kubeconfigWith(kServer + "    insecure-skip-tls-verify: sometimes\n", "    token: t\n"));
  CHECK(not_bool.error() == not_bool.prefix() + "cluster \"c\": insecure-skip-tls-verify: want true or false");
}

TEST_CASE("proxy-url is rejected as unsupported") {
  Fixture f(kubeconfigWith(kServer + "    proxy-url: socks5://localhost:1080\n", "    token: t\n"));
  const std::string error = f.error();
  CHECK(error.rfind(f.prefix() + "cluster \"c\": proxy-url is not supported", 0) == 0);
}

TEST_CASE("A CA given both as a file and as data is ambiguous") {
  Fixture f(kubeconfigWith(kServer + "    certificate-authority: ca.crt\n" +
                               indentedData("certificate-authority-data", testPki().ca_cert),
                           "    token: t\n"));
  CHECK(f.error() == f.prefix() +
                         "cluster \"c\": certificate-authority and certificate-authority-data are both set; keep one");
}

TEST_CASE("Bad CA material names the cluster and the key") {
  Fixture bad_base64(kubeconfigWith(kServer + "    certificate-authority-data: '%%%'\n", "    token: t\n"));
  CHECK(bad_base64.error() == bad_base64.prefix() + "cluster \"c\": certificate-authority-data: invalid base64");
  Fixture not_pem(kubeconfigWith(kServer + indentedData("certificate-authority-data", "hello"), "    token: t\n"));
  CHECK(not_pem.error() == not_pem.prefix() + "cluster \"c\": certificate-authority: no PEM certificate found");
  Fixture missing_file(kubeconfigWith(kServer + "    certificate-authority: pki/missing.crt\n", "    token: t\n"));
  CHECK(missing_file.error() == missing_file.prefix() + "cluster \"c\": certificate-authority: cannot read " +
                                    (missing_file.dir.path() / "kube/pki/missing.crt").string() +
                                    ": No such file or directory");
}

TEST_CASE("Client certificate and key must come as a matching pair") {
  Fixture cert_only(kubeconfigWith(kServer, indentedData("client-certificate-data", testPki().client_cert)));
  CHECK(cert_only.error() == cert_only.prefix() + "user \"u\": client-certificate is set without client-key");
  Fixture key_only(kubeconfigWith(kServer, indentedData("client-key-data", testPki().client_key)));
  CHECK(key_only.error() == key_only.prefix() + "user \"u\": client-key is set without client-certificate");
  Fixture mismatch(kubeconfigWith(kServer, indentedData("client-certificate-data", testPki().client_cert) +
                                               indentedData("client-key-data", testPki().other_key)));
  CHECK(mismatch.error() ==
        mismatch.prefix() + "user \"u\": client-key: private key does not match the client certificate");
  Fixture not_key(kubeconfigWith(kServer, indentedData("client-certificate-data", testPki().client_cert) +
                                              indentedData("client-key-data", testPki().client_cert)));
  CHECK(not_key.error() == not_key.prefix() + "user \"u\": client-key: no PEM private key found");
  Fixture both_forms(kubeconfigWith(kServer, "    client-key: k.pem\n" +
                                                 indentedData("client-key-data", testPki().client_key)));
  CHECK(both_forms.error() ==
        both_forms.prefix() + "user \"u\": client-key and client-key-data are both set; keep one");
}

TEST_CASE("tokenFile resolves against the kubeconfig's directory and is carried with the static token") {
  Fixture f(kubeconfigWith(kServer, "    token: static\n    tokenFile: tokens/t\n"));
  f.dir.write("kube/tokens/t", "rotating");
  const auto c = f.load();
  CHECK(c.upstream.bearer_token == "static");
  CHECK(c.upstream.bearer_token_file == (f.dir.path() / "kube/tokens/t").string());
  Fixture missing(kubeconfigWith(kServer, "    tokenFile: /nonexistent/token\n"));
  CHECK(missing.error() ==
        missing.prefix() + "user \"u\": tokenFile: cannot read /nonexistent/token: No such file or directory");
}

TEST_CASE("--token-file replaces the kubeconfig's token but keeps its client certificate") {
  Fixture f(kubeconfigWith(kServer, indentedData("client-certificate-data", testPki().client_cert) +
                                        indentedData("client-key-data", testPki().client_key) +
                                        "    token: static\n"));
  const auto token = f.dir.write("override-token", "override");
  const auto c = f.load({"--token-file", token.string()});
  CHECK(c.upstream.bearer_token.empty());
  CHECK(c.upstream.bearer_token_file == token.string());
  CHECK(c.upstream.client_cert_pem == testPki().client_cert);
}

TEST_CASE("Basic authentication is refused at start-up") {
  Fixture f(kubeconfigWith(kServer, "    username: admin\n    password: secret\n"));
  CHECK(f.error() == f.prefix() +
                         "user \"u\": basic authentication (username/password) is not supported; use a token or "
                         "client certificate");
}

TEST_CASE("An exec credential plugin is refused with its command named") {
  Fixture f(kubeconfigWith(kServer,
                           "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
                           "      command: aws\n      args: [eks, get-token, --cluster-name, prod]\n"));
  CHECK(f.error() == f.prefix() +
                         "user \"u\": exec credential plugin \"aws\" is not supported; use a token, tokenFile or "
                         "client certificate");
}

TEST_CASE("An auth-provider is refused with the provider named") {
  Fixture f(kubeconfigWith(kServer, "    auth-provider:\n      name: oidc\n      config: {idp-issuer-url: x}\n"));
  CHECK(f.error() == f.prefix() +
                         "user \"u\": auth-provider \"oidc\" is not supported; use a token, tokenFile or client "
                         "certificate");
}

TEST_CASE("Impersonation settings are refused rather than ignored") {
  Fixture as_user(kubeconfigWith(kServer, "    token: t\n    as: system:admin\n"));
  CHECK(as_user.error() == as_user.prefix() + "user \"u\": impersonation (as) is not supported");
  Fixture as_groups(kubeconfigWith(kServer, "    token: t\n    as-groups: [system:masters]\n"));
  CHECK(as_groups.error() == as_groups.prefix() + "user \"u\": impersonation (as-groups) is not supported");
}

TEST_CASE("Malformed kubeconfig YAML is reported with the file and line") {
  Fixture f("clusters:\n- name: c\n  cluster: {server: [unclosed\n");
  const std::string error = f.error();
  CHECK(error.rfind(f.prefix() + "malformed YAML at line ", 0) == 0);
  CHECK(error.find('\n') == std::string::npos);
}

TEST_CASE("A kubeconfig of the wrong shape names the part at fault") {
  Fixture scalar("just a string\n");
  CHECK(scalar.error() == scalar.prefix() + "want a kubeconfig mapping (apiVersion: v1, kind: Config)");
  Fixture clusters_map("current-context: ctx\ncontexts: [{name: ctx, context: {cluster: c}}]\nclusters: {c: 1}\n");
  CHECK(clusters_map.error() == clusters_map.prefix() + "clusters: want a list");
  Fixture server_list(kubeconfigWith("    server: [a, b]\n", "    token: t\n"));
  CHECK(server_list.error() == server_list.prefix() + "cluster \"c\": server: want a string");
  Fixture cluster_scalar("current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                         "clusters: [{name: c, cluster: oops}]\n");
  CHECK(cluster_scalar.error() == cluster_scalar.prefix() + "cluster \"c\": want a mapping");
}

TEST_CASE("An explicit --kubeconfig that cannot be read is an error, not a fallback") {
  config::test::TempDir dir;
  const auto missing = (dir.path() / "nope").string();
  CHECK(loadError({"--kubeconfig", missing}, config::test::emptyEnvironment(dir)) ==
        "kube-cache-proxy: kubeconfig: cannot read " + missing + ": No such file or directory");
}
