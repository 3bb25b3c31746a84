// kubectl's global credential flags and --connect-timeout: alone with
// --upstream, overriding a kubeconfig, from the config file, and the errors.

#include <doctest/doctest.h>

#include "test_support.h"

using namespace std::chrono_literals;
using config::test::loadArgs;
using config::test::testPki;

namespace {

// PEM files and a kubeconfig that already carries a CA, a client pair and
// a token, so each flag can be seen replacing one of them.
struct Fixture {
  config::test::TempDir dir;
  config::Environment env = config::test::emptyEnvironment(dir);
  std::string ca = dir.write("pki/ca.crt", testPki().ca_cert).string();
  std::string cert = dir.write("pki/client.crt", testPki().client_cert).string();
  std::string key = dir.write("pki/client.key", testPki().client_key).string();
  std::string other_key = dir.write("pki/other.key", testPki().other_key).string();
  std::string not_pem = dir.write("pki/garbage", "not a certificate\n").string();
  std::string token_file = dir.write("token", "file-token\n").string();

  std::string kubeconfig(const std::string& cluster_extra, const std::string& user) const {
    return dir
        .write("kubeconfig",
               "current-context: ctx\n"
               "clusters: [{name: c, cluster: {server: 'https://kube.example:6443'" +
                   cluster_extra +
                   "}}]\n"
                   "contexts: [{name: ctx, context: {cluster: c, user: u}}]\n"
                   "users: [{name: u, user: {" +
                   user + "}}]\n")
        .string();
  }
  // A kubeconfig with every credential the flags can override.
  std::string fullKubeconfig() const {
    return kubeconfig(", certificate-authority: '" + ca + "', tls-server-name: kube-internal",
                      "client-certificate: '" + cert + "', client-key: '" + key + "', token: kubeconfig-token");
  }
};

// load()'s error without the "kube-cache-proxy: " every ConfigError starts with.
std::string errorOf(const std::vector<std::string>& args, const config::Environment& env) {
  const std::string error = config::test::loadError(args, env);
  const std::string prefix = "kube-cache-proxy: ";
  return error.rfind(prefix, 0) == 0 ? error.substr(prefix.size()) : error;
}

std::vector<std::string> withUpstream(std::vector<std::string> args) {
  args.insert(args.begin(), {"--upstream", "https://127.0.0.1:6443"});
  return args;
}

}  // namespace

TEST_CASE("Without credential flags --upstream has no CA, no client pair, no token and a 5s connect timeout") {
  Fixture f;
  const auto u = loadArgs(withUpstream({}), f.env).upstream;
  CHECK(u.ca_pem.empty());
  CHECK(u.client_cert_pem.empty());
  CHECK(u.client_key_pem.empty());
  CHECK(u.bearer_token.empty());
  CHECK(u.tls_server_name.empty());
  CHECK_FALSE(u.insecure_skip_tls_verify);
  CHECK(u.connect_timeout == 5s);
}

TEST_CASE("--certificate-authority gives an https --upstream its CA bundle") {
  Fixture f;
  const auto u = loadArgs(withUpstream({"--certificate-authority", f.ca}), f.env).upstream;
  CHECK(u.ca_pem == testPki().ca_cert);
  CHECK(u.scheme == "https");
}

TEST_CASE("--client-certificate with --client-key gives --upstream a client key pair") {
  Fixture f;
  const auto u = loadArgs(withUpstream({"--client-certificate", f.cert, "--client-key", f.key}), f.env).upstream;
  CHECK(u.client_cert_pem == testPki().client_cert);
  CHECK(u.client_key_pem == testPki().client_key);
}

TEST_CASE("--token gives --upstream a static bearer token") {
  Fixture f;
  const auto u = loadArgs(withUpstream({"--token", "s3cret"}), f.env).upstream;
  CHECK(u.bearer_token == "s3cret");
  CHECK(u.bearer_token_file.empty());
}

TEST_CASE("--tls-server-name sets the name the apiserver certificate is checked against") {
  Fixture f;
  CHECK(loadArgs(withUpstream({"--tls-server-name", "kubernetes.default"}), f.env).upstream.tls_server_name ==
        "kubernetes.default");
}

TEST_CASE("--insecure-skip-tls-verify is a boolean flag that also takes =true and =false") {
  Fixture f;
  CHECK(loadArgs(withUpstream({"--insecure-skip-tls-verify"}), f.env).upstream.insecure_skip_tls_verify);
  CHECK(loadArgs(withUpstream({"--insecure-skip-tls-verify=true"}), f.env).upstream.insecure_skip_tls_verify);
  CHECK_FALSE(loadArgs(withUpstream({"--insecure-skip-tls-verify=false"}), f.env).upstream.insecure_skip_tls_verify);
  CHECK(errorOf(withUpstream({"--insecure-skip-tls-verify=maybe"}), f.env) ==
        "--insecure-skip-tls-verify \"maybe\": want true or false");
}

TEST_CASE("--connect-timeout takes a Go duration") {
  Fixture f;
  CHECK(loadArgs(withUpstream({"--connect-timeout", "1m30s"}), f.env).upstream.connect_timeout == 90s);
  CHECK(loadArgs(withUpstream({"--connect-timeout=250ms"}), f.env).upstream.connect_timeout == 250ms);
  CHECK(errorOf(withUpstream({"--connect-timeout", "5"}), f.env).find("--connect-timeout \"5\": ") == 0);
  CHECK(errorOf(withUpstream({"--connect-timeout", "-1s"}), f.env) ==
        "--connect-timeout \"-1s\": must not be negative");
  CHECK(errorOf(withUpstream({"--connect-timeout", "0s"}), f.env) == "--connect-timeout \"0s\": must be positive");
}

TEST_CASE("Without credential flags the kubeconfig's CA, client pair, token and server name are used") {
  Fixture f;
  const auto u = loadArgs({"--kubeconfig", f.fullKubeconfig()}, f.env).upstream;
  CHECK(u.ca_pem == testPki().ca_cert);
  CHECK(u.client_cert_pem == testPki().client_cert);
  CHECK(u.bearer_token == "kubeconfig-token");
  CHECK(u.tls_server_name == "kube-internal");
}

TEST_CASE("TLS flags for a plain-http --upstream apply but warn that they have no effect") {
  Fixture f;
  const auto c = loadArgs({"--upstream", "http://127.0.0.1:8080", "--certificate-authority", f.ca, "--token", "t"},
                          f.env);
  CHECK(c.upstream.ca_pem == testPki().ca_cert);
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0] == "--certificate-authority has no effect: the upstream 127.0.0.1 is plain http");
  CHECK(loadArgs(withUpstream({"--certificate-authority", f.ca}), f.env).warnings.empty());
}

TEST_CASE("Credential flags override the kubeconfig's values field by field") {
  Fixture f;
  const std::string kubeconfig = f.kubeconfig(", insecure-skip-tls-verify: true, tls-server-name: kube-internal",
                                              "token: kubeconfig-token, tokenFile: '" + f.token_file + "'");
  const auto u = loadArgs({"--kubeconfig", kubeconfig, "--certificate-authority", f.ca, "--tls-server-name", "other",
                           "--token", "flag-token", "--client-certificate", f.cert, "--client-key", f.key},
                          f.env)
                     .upstream;
  CHECK(u.ca_pem == testPki().ca_cert);
  // kubectl: a CA flag also replaces the kubeconfig's insecure-skip-tls-verify.
  CHECK_FALSE(u.insecure_skip_tls_verify);
  CHECK(u.tls_server_name == "other");
  CHECK(u.client_cert_pem == testPki().client_cert);
  CHECK(u.client_key_pem == testPki().client_key);
  // The tokenFile would win over a static token, so --token drops it.
  CHECK(u.bearer_token == "flag-token");
  CHECK(u.bearer_token_file.empty());
  CHECK(u.host == "kube.example");
}

TEST_CASE("--insecure-skip-tls-verify drops the kubeconfig's CA instead of failing on the pair") {
  Fixture f;
  const auto u = loadArgs({"--kubeconfig", f.fullKubeconfig(), "--insecure-skip-tls-verify"}, f.env).upstream;
  CHECK(u.insecure_skip_tls_verify);
  CHECK(u.ca_pem.empty());
  const auto kept = loadArgs({"--kubeconfig", f.fullKubeconfig(), "--insecure-skip-tls-verify=false"}, f.env).upstream;
  CHECK(kept.ca_pem == testPki().ca_cert);
}

TEST_CASE("--token-file replaces the kubeconfig's token and is refused together with --token") {
  Fixture f;
  const auto u = loadArgs({"--kubeconfig", f.fullKubeconfig(), "--token-file", f.token_file}, f.env).upstream;
  CHECK(u.bearer_token.empty());
  CHECK(u.bearer_token_file == f.token_file);
  CHECK(errorOf(withUpstream({"--token", "t", "--token-file", f.token_file}), f.env) ==
        "--token and --token-file are both set; keep one");
}

TEST_CASE("--insecure-skip-tls-verify with --certificate-authority is the kubeconfig's error") {
  Fixture f;
  CHECK(errorOf(withUpstream({"--certificate-authority", f.ca, "--insecure-skip-tls-verify"}), f.env) ==
        "--insecure-skip-tls-verify: insecure-skip-tls-verify cannot be combined with a certificate authority "
        "(--certificate-authority)");
  CHECK(loadArgs(withUpstream({"--certificate-authority", f.ca, "--insecure-skip-tls-verify=false"}), f.env)
            .upstream.ca_pem == testPki().ca_cert);
}

TEST_CASE("A client certificate flag without its key, or a key without its certificate, is refused") {
  Fixture f;
  CHECK(errorOf(withUpstream({"--client-certificate", f.cert}), f.env) ==
        "--client-certificate is set without --client-key");
  CHECK(errorOf(withUpstream({"--client-key", f.key}), f.env) == "--client-key is set without --client-certificate");
}

TEST_CASE("A client key that does not match the certificate is refused, naming --client-key") {
  Fixture f;
  const std::string error = errorOf(withUpstream({"--client-certificate", f.cert, "--client-key", f.other_key}), f.env);
  CHECK(error.find("--client-key " + f.other_key + ": ") == 0);
}

TEST_CASE("Unreadable, empty or non-PEM credential files are refused, naming the flag") {
  Fixture f;
  const std::string missing = (f.dir.path() / "missing.crt").string();
  CHECK(errorOf(withUpstream({"--certificate-authority", missing}), f.env)
            .find("--certificate-authority: cannot read") == 0);
  CHECK(errorOf(withUpstream({"--certificate-authority", f.not_pem}), f.env).find("--certificate-authority " +
                                                                                     f.not_pem + ": ") == 0);
  CHECK(errorOf(withUpstream({"--client-certificate", f.not_pem, "--client-key", f.key}), f.env)
            .find("--client-certificate " + f.not_pem + ": ") == 0);
  CHECK(errorOf(withUpstream({"--client-certificate", f.cert, "--client-key", f.cert}), f.env)
            .find("--client-key " + f.cert + ": ") == 0);
  const auto file = f.dir.write("proxy.yaml", "upstream: https://127.0.0.1:6443\ntoken: ''\n");
  CHECK(errorOf({"--config", file.string()}, f.env) == file.string() + ": token: must not be empty");
}

TEST_CASE("Credential settings in the config file apply, with paths relative to the file") {
  Fixture f;
  const auto file = f.dir.write("etc/proxy.yaml",
                                "upstream: https://127.0.0.1:6443\n"
                                "certificate-authority: ../pki/ca.crt\n"
                                "client-certificate: ../pki/client.crt\n"
                                "client-key: ../pki/client.key\n"
                                "token: file-token\n"
                                "tls-server-name: from-file\n"
                                "connect-timeout: 2s\n");
  const auto u = loadArgs({"--config", file.string()}, f.env).upstream;
  CHECK(u.ca_pem == testPki().ca_cert);
  CHECK(u.client_key_pem == testPki().client_key);
  CHECK(u.bearer_token == "file-token");
  CHECK(u.tls_server_name == "from-file");
  CHECK(u.connect_timeout == 2s);
}

TEST_CASE("Credential flags win over the same keys in the config file") {
  Fixture f;
  const auto file = f.dir.write("proxy.yaml",
                                "upstream: https://127.0.0.1:6443\n"
                                "token: file-token\n"
                                "tls-server-name: from-file\n"
                                "insecure-skip-tls-verify: yes\n"
                                "connect-timeout: 2s\n");
  const auto from_file = loadArgs({"--config", file.string()}, f.env).upstream;
  CHECK(from_file.insecure_skip_tls_verify);
  const auto u = loadArgs({"--config", file.string(), "--token", "flag-token", "--tls-server-name", "from-flag",
                           "--insecure-skip-tls-verify=false", "--connect-timeout", "7s"},
                          f.env)
                     .upstream;
  CHECK(u.bearer_token == "flag-token");
  CHECK(u.tls_server_name == "from-flag");
  CHECK_FALSE(u.insecure_skip_tls_verify);
  CHECK(u.connect_timeout == 7s);
}

TEST_CASE("--token overrides the in-cluster service account token") {
  Fixture f;
  f.env.kubernetes_service_host = "10.96.0.1";
  f.env.kubernetes_service_port = "443";
  f.dir.write("serviceaccount/token", "sa-token");
  f.dir.write("serviceaccount/ca.crt", testPki().ca_cert);
  const auto u = loadArgs({"--token", "flag-token"}, f.env).upstream;
  CHECK(u.source == config::UpstreamSource::InCluster);
  CHECK(u.bearer_token == "flag-token");
  CHECK(u.bearer_token_file.empty());
  CHECK(u.ca_pem == testPki().ca_cert);
}

TEST_CASE("--help lists every credential flag") {
  const std::string help = config::helpText();
  for (const char* flag : {"--certificate-authority", "--client-certificate", "--client-key", "--token TOKEN",
                           "--token-file", "--tls-server-name", "--insecure-skip-tls-verify", "--connect-timeout"}) {
    CHECK_MESSAGE(help.find(flag) != std::string::npos, flag);
  }
}
