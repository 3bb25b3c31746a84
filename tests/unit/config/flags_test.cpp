// Every command-line flag, through config::load(). Each case names an
// --upstream so upstream discovery stays out of the way.

#include <doctest/doctest.h>

#include "test_support.h"

using namespace std::chrono_literals;
using config::test::loadArgs;
using config::test::loadError;

namespace {

std::vector<std::string> withUpstream(std::vector<std::string> args) {
  args.insert(args.begin(), {"--upstream", "http://127.0.0.1:6443"});
  return args;
}

}  // namespace

TEST_CASE("Without flags the proxy listens on loopback port 8001 with quiet text logs") {
  config::test::TempDir dir;
  const config::Config c = loadArgs(withUpstream({}), config::test::emptyEnvironment(dir));
  CHECK(c.listen == config::ListenAddress{"127.0.0.1", 8001});
  CHECK(c.log_format == config::LogFormat::Text);
  CHECK(c.verbosity == 0);
  CHECK(c.io_threads == 0);
  CHECK(c.shutdown_timeout == 5s);
  CHECK(c.cache.empty());
  CHECK(c.no_cache.empty());
  CHECK_FALSE(c.write_sync);
  CHECK(c.state_dir.empty());
  CHECK(c.mode == config::Mode::Sidecar);
  CHECK(c.warnings.empty());
}

TEST_CASE("--listen takes host:port, bracketed IPv6 and Go's bare :port") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs(withUpstream({"--listen", "127.0.0.2:9000"}), env).listen ==
        config::ListenAddress{"127.0.0.2", 9000});
  CHECK(loadArgs(withUpstream({"--listen=[::1]:0"}), env).listen == config::ListenAddress{"::1", 0});
  CHECK(loadArgs(withUpstream({"--listen", "localhost:8001"}), env).listen.host == "localhost");
  CHECK(loadArgs(withUpstream({"--listen", ":8080", "--mode", "gateway", "--tls-cert-file", "tls.crt",
                                "--tls-private-key-file", "tls.key"}),
                 env)
            .listen ==
        config::ListenAddress{"0.0.0.0", 8080});
  CHECK(config::ListenAddress{"::1", 8001}.toString() == "[::1]:8001");
}

TEST_CASE("--listen rejects values that are not host:port") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadError(withUpstream({"--listen", "8001"}), env) ==
        "kube-cache-proxy: --listen \"8001\": want host:port, e.g. 127.0.0.1:8001");
  CHECK(loadError(withUpstream({"--listen", "::1:8001"}), env) ==
        "kube-cache-proxy: --listen \"::1:8001\": IPv6 addresses go in brackets, e.g. [::1]:8001");
  CHECK(loadError(withUpstream({"--listen", "[::1]"}), env) ==
        "kube-cache-proxy: --listen \"[::1]\": want host:port, e.g. [::1]:8001");
  CHECK(loadError(withUpstream({"--listen", "my host:80"}), env) ==
        "kube-cache-proxy: --listen \"my host:80\": invalid host");
  CHECK(loadError(withUpstream({"--listen", "[zz]:1"}), env) ==
        "kube-cache-proxy: --listen \"[zz]:1\": invalid IPv6 address");
  CHECK(loadError(withUpstream({"--listen", "127.0.0.1:70000"}), env) ==
        "kube-cache-proxy: --listen \"127.0.0.1:70000\": port \"70000\" is out of range");
  CHECK(loadError(withUpstream({"--listen", "127.0.0.1:http"}), env) ==
        "kube-cache-proxy: --listen \"127.0.0.1:http\": invalid port \"http\"");
}

TEST_CASE("Only a gateway serving TLS listens beyond loopback") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadError(withUpstream({"--listen", "0.0.0.0:8001"}), env) ==
        "kube-cache-proxy: --listen 0.0.0.0:8001: sidecar mode listens on loopback only (anyone reaching it would "
        "use the proxy's credentials); use --mode gateway to serve other hosts");
  CHECK(loadError(withUpstream({"--listen", "0.0.0.0:8001", "--mode", "gateway"}), env) ==
        "kube-cache-proxy: --listen 0.0.0.0:8001: a gateway beyond loopback needs --tls-cert-file and "
        "--tls-private-key-file (bearer tokens must not cross the network in clear text)");
  const auto gateway = loadArgs(withUpstream({"--listen", "0.0.0.0:8001", "--mode", "gateway", "--tls-cert-file",
                                              "tls.crt", "--tls-private-key-file", "tls.key"}),
                                env);
  CHECK(gateway.warnings.empty());
  CHECK(gateway.tls_cert_file == "tls.crt");
  CHECK(gateway.tls_private_key_file == "tls.key");
  CHECK(loadArgs(withUpstream({"--listen", "127.1.2.3:8001"}), env).warnings.empty());
  CHECK(loadArgs(withUpstream({"--listen", "127.0.0.1:8001", "--mode", "gateway"}), env).mode == config::Mode::Gateway);
}

TEST_CASE("TLS serving flags go together; client certificates need a TLS gateway") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadError(withUpstream({"--tls-cert-file", "tls.crt"}), env) ==
        "kube-cache-proxy: --tls-cert-file and --tls-private-key-file go together");
  CHECK(loadError(withUpstream({"--mode", "gateway", "--client-ca-file", "ca.crt"}), env) ==
        "kube-cache-proxy: --client-ca-file: client certificates need --mode gateway and --tls-cert-file");
  const auto c = loadArgs(withUpstream({"--mode", "gateway", "--tls-cert-file", "tls.crt", "--tls-private-key-file",
                                        "tls.key", "--client-ca-file", "ca.crt", "--authentication-cache-ttl", "1m",
                                        "--authorization-cache-ttl", "0s", "--auth-cache-size", "500"}),
                          env);
  CHECK(c.client_ca_file == "ca.crt");
  CHECK(c.authentication_cache_ttl == 1min);
  CHECK(c.authorization_cache_ttl == 0s);
  CHECK(c.auth_cache_size == 500);
  CHECK(loadError(withUpstream({"--auth-cache-size", "lots"}), env) ==
        "kube-cache-proxy: --auth-cache-size \"lots\": want a count from 0 to 10000000");
}

TEST_CASE("--log-format accepts text and json only") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs(withUpstream({"--log-format", "json"}), env).log_format == config::LogFormat::Json);
  CHECK(loadArgs(withUpstream({"--log-format=text"}), env).log_format == config::LogFormat::Text);
  CHECK(loadError(withUpstream({"--log-format", "xml"}), env) ==
        "kube-cache-proxy: --log-format \"xml\": want text or json");
}

TEST_CASE("--store-encoding accepts plain, history and compressed, compressed by default") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs(withUpstream({}), env).store_encoding == config::StoreEncoding::Compressed);
  CHECK(loadArgs(withUpstream({"--store-encoding", "plain"}), env).store_encoding == config::StoreEncoding::Plain);
  CHECK(loadArgs(withUpstream({"--store-encoding=history"}), env).store_encoding == config::StoreEncoding::History);
  CHECK(loadArgs(withUpstream({"--store-encoding=compressed"}), env).store_encoding ==
        config::StoreEncoding::Compressed);
  CHECK(loadError(withUpstream({"--store-encoding", "gzip"}), env) ==
        "kube-cache-proxy: --store-encoding \"gzip\": want plain, history or compressed");
}

TEST_CASE("-v and --v take a level from 0 to 9 in every kubectl spelling") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs(withUpstream({"-v", "3"}), env).verbosity == 3);
  CHECK(loadArgs(withUpstream({"-v=4"}), env).verbosity == 4);
  CHECK(loadArgs(withUpstream({"-v5"}), env).verbosity == 5);
  CHECK(loadArgs(withUpstream({"--v=9"}), env).verbosity == 9);
  CHECK(loadArgs(withUpstream({"--v", "0"}), env).verbosity == 0);
  CHECK(loadError(withUpstream({"--v", "10"}), env) == "kube-cache-proxy: --v \"10\": want a level from 0 to 9");
  CHECK(loadError(withUpstream({"-v", "high"}), env) ==
        "kube-cache-proxy: --v \"high\": want a level from 0 to 9");
}

TEST_CASE("--io-threads takes a count, 0 meaning one per core") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs(withUpstream({"--io-threads", "4"}), env).io_threads == 4);
  CHECK(loadArgs(withUpstream({"--io-threads", "0"}), env).io_threads == 0);
  CHECK(loadError(withUpstream({"--io-threads", "-1"}), env).find("--io-threads \"-1\": want a thread count") !=
        std::string::npos);
  CHECK(loadError(withUpstream({"--io-threads", "5000"}), env).find("--io-threads \"5000\"") !=
        std::string::npos);
}

TEST_CASE("--shutdown-timeout takes a non-negative Go duration") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs(withUpstream({"--shutdown-timeout", "1m30s"}), env).shutdown_timeout == 90s);
  CHECK(loadArgs(withUpstream({"--shutdown-timeout", "250ms"}), env).shutdown_timeout == 250ms);
  CHECK(loadArgs(withUpstream({"--shutdown-timeout", "0"}), env).shutdown_timeout == 0ms);
  // Rounded up, so a tiny timeout still waits.
  CHECK(loadArgs(withUpstream({"--shutdown-timeout", "10us"}), env).shutdown_timeout == 1ms);
  CHECK(loadError(withUpstream({"--shutdown-timeout", "5"}), env) ==
        "kube-cache-proxy: --shutdown-timeout \"5\": missing unit in duration \"5\" "
        "(use Go syntax such as 5s, 1m30s, 250ms)");
  CHECK(loadError(withUpstream({"--shutdown-timeout=-1s"}), env) ==
        "kube-cache-proxy: --shutdown-timeout \"-1s\": must not be negative");
}

TEST_CASE("--cache takes comma-separated resource names, repeated flags add up and duplicates collapse") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const auto c = loadArgs(withUpstream({"--cache", "pods,configmaps,deployments.apps", "--cache",
                                        "certificatesigningrequests.certificates.k8s.io,pods"}),
                          env);
  REQUIRE(c.cache.size() == 4);
  CHECK(c.cache[0] == config::GroupResource{"pods", ""});
  CHECK(c.cache[1] == config::GroupResource{"configmaps", ""});
  CHECK(c.cache[2] == config::GroupResource{"deployments", "apps"});
  CHECK(c.cache[3] == config::GroupResource{"certificatesigningrequests", "certificates.k8s.io"});
  CHECK(c.cache[2].toString() == "deployments.apps");
  CHECK(c.cache[0].toString() == "pods");
}

TEST_CASE("--cache rejects names that are not lower-case resource names") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadError(withUpstream({"--cache", "Pods"}), env) ==
        "kube-cache-proxy: --cache \"Pods\": want a lower-case resource name such as pods or deployments.apps");
  CHECK_FALSE(loadError(withUpstream({"--cache", "pods/status"}), env).empty());
  CHECK_FALSE(loadError(withUpstream({"--cache", "deployments..apps"}), env).empty());
  CHECK_FALSE(loadError(withUpstream({"--cache", "-pods"}), env).empty());
}

TEST_CASE("--no-cache takes resource names that must not also be in --cache") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const auto c = loadArgs(withUpstream({"--no-cache", "secrets, events.events.k8s.io"}), env);
  REQUIRE(c.no_cache.size() == 2);
  CHECK(c.no_cache[0] == config::GroupResource{"secrets", ""});
  CHECK(c.no_cache[1] == config::GroupResource{"events", "events.k8s.io"});
  CHECK(loadError(withUpstream({"--cache", "pods,secrets", "--no-cache", "secrets"}), env) ==
        "kube-cache-proxy: secrets is in both --cache and --no-cache");
}

TEST_CASE("--write-sync is a boolean flag that also takes Go's boolean spellings") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs(withUpstream({"--write-sync"}), env).write_sync);
  CHECK(loadArgs(withUpstream({"--write-sync=True"}), env).write_sync);
  CHECK(loadArgs(withUpstream({"--write-sync=1"}), env).write_sync);
  CHECK_FALSE(loadArgs(withUpstream({"--write-sync=false"}), env).write_sync);
  CHECK_FALSE(loadArgs(withUpstream({"--write-sync=F"}), env).write_sync);
  CHECK(loadError(withUpstream({"--write-sync=maybe"}), env) ==
        "kube-cache-proxy: --write-sync \"maybe\": want true or false");
}

TEST_CASE("--state-dir takes a directory path") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs(withUpstream({"--state-dir", "/var/lib/kube-cache-proxy"}), env).state_dir ==
        "/var/lib/kube-cache-proxy");
  CHECK(loadError(withUpstream({"--state-dir", ""}), env) == "kube-cache-proxy: --state-dir: must not be empty");
}

TEST_CASE("--state-key-file reads a key of at least 32 bytes for --state-dir, without its trailing newline") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const std::string key = dir.write("key", std::string(44, 'k') + "\n").string();
  const std::string binary = dir.write("binary", std::string("\0\xff\n", 3) + std::string(30, 'b')).string();
  const std::string short_key = dir.write("short", std::string(31, 'k') + "\n").string();
  CHECK(loadArgs(withUpstream({"--state-dir", "/s", "--state-key-file", key}), env).state_key == std::string(44, 'k'));
  CHECK(loadArgs(withUpstream({"--state-dir", "/s", "--state-key-file", binary}), env).state_key.size() == 33);
  CHECK(loadArgs(withUpstream({"--state-dir", "/s"}), env).state_key.empty());
  CHECK(loadError(withUpstream({"--state-dir", "/s", "--state-key-file", short_key}), env) ==
        "kube-cache-proxy: --state-key-file " + short_key +
            ": a key of 31 bytes; at least 32 are needed (e.g. head -c 32 /dev/urandom | base64 > FILE)");
  CHECK(loadError(withUpstream({"--state-key-file", key}), env) == "kube-cache-proxy: --state-key-file: needs --state-dir");
}

TEST_CASE("--mode accepts sidecar and gateway only") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs(withUpstream({"--mode", "gateway"}), env).mode == config::Mode::Gateway);
  CHECK(loadArgs(withUpstream({"--mode", "sidecar"}), env).mode == config::Mode::Sidecar);
  CHECK(loadError(withUpstream({"--mode", "mesh"}), env) ==
        "kube-cache-proxy: --mode \"mesh\": want sidecar or gateway");
}

TEST_CASE("A repeated flag takes its last value, as pflag does") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs(withUpstream({"--mode", "gateway", "--mode", "sidecar"}), env).mode == config::Mode::Sidecar);
}

TEST_CASE("--help and --version ask main to print text and exit 0") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  try {
    loadArgs({"--help"}, env);
    FAIL("--help must not return a Config");
  } catch (const config::ExitRequest& exit) {
    CHECK(exit.code == 0);
    CHECK(exit.text == config::helpText());
  }
  try {
    loadArgs({"-h"}, env);
    FAIL("-h must not return a Config");
  } catch (const config::ExitRequest& exit) {
    CHECK(exit.code == 0);
  }
  try {
    loadArgs({"--version"}, env);
    FAIL("--version must not return a Config");
  } catch (const config::ExitRequest& exit) {
    CHECK(exit.code == 0);
    CHECK(exit.text == config::versionText());
    CHECK(exit.text.rfind("kube-cache-proxy ", 0) == 0);
    CHECK(exit.text.back() == '\n');
  }
}

TEST_CASE("The help text documents every flag") {
  const std::string help = config::helpText();
  for (const char* flag : {"--listen", "--upstream", "--kubeconfig", "--context", "--token-file", "--config",
                           "--log-format", "-v, --v", "--io-threads", "--shutdown-timeout", "--cache", "--no-cache",
                           "--write-sync", "--state-dir", "--mode", "--help", "--version", "--watch-bookmark-interval",
                           "--watch-max-lifetime", "--watch-queue-capacity"}) {
    CAPTURE(flag);
    CHECK(help.find(flag) != std::string::npos);
  }
}

TEST_CASE("Unknown flags, stray arguments and missing values are one-line errors") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadError(withUpstream({"--bogus"}), env) == "kube-cache-proxy: unknown flag: --bogus (see --help)");
  CHECK(loadError(withUpstream({"--bogus=1"}), env) == "kube-cache-proxy: unknown flag: --bogus (see --help)");
  CHECK(loadError(withUpstream({"-x"}), env) == "kube-cache-proxy: unknown flag: -x (see --help)");
  CHECK(loadError(withUpstream({"serve"}), env) ==
        "kube-cache-proxy: unexpected argument \"serve\": kube-cache-proxy takes flags only (see --help)");
  CHECK(loadError(withUpstream({"--listen"}), env) == "kube-cache-proxy: --listen: needs a value (see --help)");
  CHECK(loadError(withUpstream({"--state-dir="}), env) ==
        "kube-cache-proxy: --state-dir: needs a value (see --help)");
}

TEST_CASE("--state-save-interval and --drift-check-interval take Go durations; 0 turns them off") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const config::Config defaults = loadArgs(withUpstream({}), env);
  CHECK(defaults.state_save_interval == std::chrono::seconds(60));
  CHECK(defaults.drift_check_interval == std::chrono::milliseconds(0));
  const config::Config set =
      loadArgs(withUpstream({"--state-save-interval", "5m", "--drift-check-interval=250ms"}), env);
  CHECK(set.state_save_interval == std::chrono::minutes(5));
  CHECK(set.drift_check_interval == std::chrono::milliseconds(250));
  CHECK(loadArgs(withUpstream({"--state-save-interval=0"}), env).state_save_interval.count() == 0);
  CHECK(config::helpText().find("--state-save-interval") != std::string::npos);
  CHECK(config::helpText().find("--drift-check-interval") != std::string::npos);
}

TEST_CASE("A list flag with an empty value is the empty list, not a flag taking the next arguments") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const config::Config c = loadArgs(withUpstream({"--refuse-client-cert-groups=", "-v", "2"}), env);
  CHECK(c.refuse_client_cert_groups.empty());
  CHECK(c.verbosity == 2);
  CHECK(loadArgs(withUpstream({"--no-cache=", "--cache", "pods"}), env).cache ==
        std::vector<config::GroupResource>{{"pods", ""}});
}
