// Options of the watches served from the cache: bookmark period, maximum lifetime
// (the apiserver's jittered request timeout) and the per-watcher queue.

#include <doctest/doctest.h>

#include "test_support.h"

using namespace std::chrono_literals;
using config::test::loadArgs;
using config::test::loadError;

namespace {
const char* const kUpstream[] = {"--upstream", "http://127.0.0.1:6443"};
}

TEST_CASE("Watch options default to the apiserver's: 60 s bookmarks, 1 h maximum lifetime") {
  config::test::TempDir dir;
  const auto c = loadArgs({kUpstream[0], kUpstream[1]}, config::test::emptyEnvironment(dir));
  CHECK(c.watch_bookmark_interval == 60s);
  CHECK(c.watch_max_lifetime == 1h);
  CHECK(c.watch_queue_capacity == 1000);
  CHECK(c.unsynced_watch_timeout == 30s);
}

TEST_CASE("--watch-bookmark-interval, --watch-max-lifetime and --watch-queue-capacity are read from flags") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  const auto c = loadArgs({kUpstream[0], kUpstream[1], "--watch-bookmark-interval", "500ms", "--watch-max-lifetime=90s",
                           "--watch-queue-capacity", "25"},
                          env);
  CHECK(c.watch_bookmark_interval == 500ms);
  CHECK(c.watch_max_lifetime == 90s);
  CHECK(c.watch_queue_capacity == 25);
  CHECK(loadError({kUpstream[0], kUpstream[1], "--watch-bookmark-interval", "0"}, env) ==
        "kube-cache-proxy: --watch-bookmark-interval \"0\": must be positive");
  CHECK(loadError({kUpstream[0], kUpstream[1], "--watch-max-lifetime", "-1s"}, env) ==
        "kube-cache-proxy: --watch-max-lifetime \"-1s\": must not be negative");
  CHECK(loadError({kUpstream[0], kUpstream[1], "--watch-queue-capacity", "0"}, env) ==
        "kube-cache-proxy: --watch-queue-capacity \"0\": want a count from 1 to 999999999");
  CHECK(loadError({kUpstream[0], kUpstream[1], "--watch-queue-capacity", "many"}, env) ==
        "kube-cache-proxy: --watch-queue-capacity \"many\": want a count from 1 to 999999999");
}

TEST_CASE("Watch options are config-file keys named like the flags, and flags win") {
  config::test::TempDir dir;
  const auto file = dir.write("proxy.yaml", R"(
upstream: http://127.0.0.1:6443
watch-bookmark-interval: 30s
watch-max-lifetime: 10m
watch-queue-capacity: 200
)");
  const auto env = config::test::emptyEnvironment(dir);
  const auto c = loadArgs({"--config", file.string()}, env);
  CHECK(c.watch_bookmark_interval == 30s);
  CHECK(c.watch_max_lifetime == 10min);
  CHECK(c.watch_queue_capacity == 200);
  CHECK(loadArgs({"--config", file.string(), "--watch-queue-capacity", "7"}, env).watch_queue_capacity == 7);
}

TEST_CASE("--unsynced-watch-timeout is a duration, 0 leaving pass-through watches as asked, and a config-file key") {
  config::test::TempDir dir;
  const auto env = config::test::emptyEnvironment(dir);
  CHECK(loadArgs({kUpstream[0], kUpstream[1], "--unsynced-watch-timeout", "45s"}, env).unsynced_watch_timeout == 45s);
  CHECK(loadArgs({kUpstream[0], kUpstream[1], "--unsynced-watch-timeout=0"}, env).unsynced_watch_timeout == 0s);
  const auto file = dir.write("proxy.yaml", "upstream: http://127.0.0.1:6443\nunsynced-watch-timeout: 2m\n");
  CHECK(loadArgs({"--config", file.string()}, env).unsynced_watch_timeout == 2min);
}
