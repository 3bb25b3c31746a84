#include "config/config_error.h"

#include <doctest/doctest.h>

#include "test_support.h"

TEST_CASE("A ConfigError is one line prefixed with the program name") {
  const config::ConfigError error("key \"x\": first\nsecond");
  CHECK(std::string(error.what()) == "kube-cache-proxy: key \"x\": first second");
}

TEST_CASE("--help is answered even when other arguments are wrong") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK_THROWS_AS(config::test::loadArgs({"--mode", "mesh", "--bogus", "--help"}, env), config::ExitRequest);
}
