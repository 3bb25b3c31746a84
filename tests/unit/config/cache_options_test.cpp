// Caching options: on-demand caching, the idle timeout and the config file's
// per-resource `resources` list (namespaces, managedFields stripping, custom indexes).

#include <doctest/doctest.h>

#include "test_support.h"

using namespace std::chrono_literals;
using config::test::loadArgs;
using config::test::loadError;

TEST_CASE("Caching on demand is on by default with a ten-minute idle timeout") {
  config::test::TempDir dir;
  const auto c = loadArgs({"--upstream", "http://127.0.0.1:6443"}, config::test::emptyEnvironment(dir));
  CHECK(c.cache_on_demand);
  CHECK(c.cache_idle_timeout == 10min);
  CHECK(c.cache_resources.empty());
}

TEST_CASE("--cache-on-demand=false and --cache-idle-timeout are read from flags") {
  config::test::TempDir dir;
  const auto c = loadArgs({"--upstream", "http://127.0.0.1:6443", "--cache-on-demand=false", "--cache-idle-timeout",
                           "90s"},
                          config::test::emptyEnvironment(dir));
  CHECK_FALSE(c.cache_on_demand);
  CHECK(c.cache_idle_timeout == 90s);
  CHECK(loadError({"--upstream", "http://127.0.0.1:6443", "--cache-idle-timeout", "soon"},
                  config::test::emptyEnvironment(dir))
            .find("--cache-idle-timeout") != std::string::npos);
}

TEST_CASE("The config file's resources list configures each resource and caches it from start-up") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", R"(
upstream: http://127.0.0.1:6443
cache: [configmaps]
cache-on-demand: false
cache-idle-timeout: 1m
resources:
  - resource: pods
    namespaces: [web, db]
    strip-managed-fields: true
    indexes: {owner: .metadata.labels.owner, size: spec.size}
  - resource: deployments.apps
)");
  const auto c = loadArgs({"--config", file.string()}, config::test::emptyEnvironment(dir));
  CHECK_FALSE(c.cache_on_demand);
  CHECK(c.cache_idle_timeout == 1min);
  REQUIRE(c.cache.size() == 3);
  CHECK(c.cache[0] == config::GroupResource{"configmaps", ""});
  CHECK(c.cache[1] == config::GroupResource{"pods", ""});
  CHECK(c.cache[2] == config::GroupResource{"deployments", "apps"});
  REQUIRE(c.cache_resources.size() == 2);
  const auto& pods = c.cache_resources[0];
  CHECK(pods.namespaces == std::vector<std::string>{"web", "db"});
  CHECK(pods.strip_managed_fields);
  REQUIRE(pods.indexes.size() == 2);
  CHECK(pods.indexes[0] == std::pair<std::string, std::string>{"owner", "metadata.labels.owner"});
  CHECK(pods.indexes[1] == std::pair<std::string, std::string>{"size", "spec.size"});
  CHECK_FALSE(c.cache_resources[1].strip_managed_fields);
  CHECK(c.cache_resources[1].namespaces.empty());
}

TEST_CASE("Mistakes in the resources list are reported with where they are") {
  config::test::TempDir dir;
  auto error = [&](const std::string& yaml) {
    const auto file = dir.write("proxy.yaml", "upstream: http://127.0.0.1:6443\n" + yaml);
    return loadError({"--config", file.string()}, config::test::emptyEnvironment(dir));
  };
  CHECK(error("resources: pods\n").find("resources: want a list of resources") != std::string::npos);
  CHECK(error("resources:\n  - namespaces: [a]\n").find("resources[0]: missing `resource`") != std::string::npos);
  CHECK(error("resources:\n  - resource: Pods\n").find("resources[0].resource") != std::string::npos);
  CHECK(error("resources:\n  - resource: pods\n    namespaces: [Web]\n").find("not a namespace name") !=
        std::string::npos);
  CHECK(error("resources:\n  - resource: pods\n    color: red\n").find("unknown key \"color\"") != std::string::npos);
  CHECK(error("resources:\n  - resource: pods\n    indexes: {owner: \"\"}\n").find("dotted JSON path") !=
        std::string::npos);
  CHECK(error("resources:\n  - resource: pods\n    strip-managed-fields: maybe\n").find("want true or false") !=
        std::string::npos);
}

TEST_CASE("A resource both configured and denied is an error") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", "upstream: http://127.0.0.1:6443\nno-cache: secrets\nresources:\n  - resource: secrets\n");
  CHECK(loadError({"--config", file.string()}, config::test::emptyEnvironment(dir)).find("secrets is in both") !=
        std::string::npos);
}

TEST_CASE("Read-your-writes: --write-sync-timeout and a per-resource write-sync in the resources list") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", R"(
upstream: http://127.0.0.1:6443
write-sync: true
write-sync-timeout: 2s
resources:
  - resource: configmaps
    write-sync: off
  - resource: pods
)");
  const auto c = loadArgs({"--config", file.string()}, config::test::emptyEnvironment(dir));
  CHECK(c.write_sync);
  CHECK(c.write_sync_timeout == 2s);
  REQUIRE(c.cache_resources.size() == 2);
  CHECK(c.cache_resources[0].write_sync == std::optional<bool>(false));
  CHECK_FALSE(c.cache_resources[1].write_sync.has_value());
  const auto defaults = loadArgs({"--upstream", "http://127.0.0.1:6443"}, config::test::emptyEnvironment(dir));
  CHECK(defaults.write_sync_timeout == 5s);
  CHECK(loadArgs({"--config", file.string(), "--write-sync-timeout", "250ms"}, config::test::emptyEnvironment(dir))
            .write_sync_timeout == 250ms);
}

TEST_CASE("Read policy: --read-policy and a per-resource read-policy in the resources list (issue #15)") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", R"(
upstream: http://127.0.0.1:6443
read-policy: cache
resources:
  - resource: secrets
    read-policy: strict
  - resource: pods
)");
  const auto c = loadArgs({"--config", file.string()}, config::test::emptyEnvironment(dir));
  CHECK(c.read_policy == config::ReadPolicy::Cache);
  REQUIRE(c.cache_resources.size() == 2);
  CHECK(c.cache_resources[0].read_policy == std::optional<config::ReadPolicy>(config::ReadPolicy::Strict));
  CHECK_FALSE(c.cache_resources[1].read_policy.has_value());
  // The apiserver's guarantee is the default; the flag wins over the file.
  CHECK(loadArgs({"--upstream", "http://127.0.0.1:6443"}, config::test::emptyEnvironment(dir)).read_policy ==
        config::ReadPolicy::Strict);
  CHECK(loadArgs({"--config", file.string(), "--read-policy", "strict"}, config::test::emptyEnvironment(dir))
            .read_policy == config::ReadPolicy::Strict);
  CHECK(loadError({"--upstream", "http://127.0.0.1:6443", "--read-policy", "fast"}, config::test::emptyEnvironment(dir))
            .find("want strict or cache") != std::string::npos);
}

TEST_CASE("Client certificates naming system:masters are refused unless configured (issue 16, finding 6)") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs({"--upstream", "http://127.0.0.1:6443"}, env).refuse_client_cert_groups ==
        std::vector<std::string>{"system:masters"});
  CHECK(loadArgs({"--upstream", "http://127.0.0.1:6443", "--refuse-client-cert-groups", "system:masters,system:nodes"}, env)
            .refuse_client_cert_groups == std::vector<std::string>{"system:masters", "system:nodes"});
  CHECK(loadArgs({"--upstream", "http://127.0.0.1:6443", "--refuse-client-cert-groups", ""}, env)
            .refuse_client_cert_groups.empty());
}
