// HTTP/2 limits of its own (issue 34): the numbers one connection is held to, as Go's
// x/net/http2 server counts them, and the client's RST_STREAM budget.
#include "proxy/http2/http2_limits.h"

#include <doctest/doctest.h>

#include "proxy/server/server_options.h"

using proxy::io::http2Limits;
using proxy::io::ResetBudget;
using Clock = std::chrono::steady_clock;

TEST_CASE("rapid reset: running handlers are the stream limit, 4x as many may wait (Go's scheduleHandler)") {
  proxy::ServerOptions options;
  options.http2_max_streams = 10;
  const auto limits = http2Limits(options);
  CHECK(limits.max_streams == 10);
  CHECK(limits.max_waiting_handlers == 40);
}

TEST_CASE("the header list limit is --max-header-bytes plus Go's 10 fields of 32 bytes") {
  proxy::ServerOptions options;
  options.max_header_bytes = 1 << 20;
  CHECK(http2Limits(options).max_header_list_bytes == (1 << 20) + 320);
}

TEST_CASE("unfinished header blocks: the idle and read-header timeouts are the server's") {
  proxy::ServerOptions options;
  options.idle_timeout = std::chrono::seconds(3);
  options.read_header_timeout = std::chrono::seconds(5);
  const auto limits = http2Limits(options);
  CHECK(limits.idle == std::chrono::seconds(3));
  CHECK(limits.read_header == std::chrono::seconds(5));
}

TEST_CASE("reset budget: a burst at once, then the rate a second") {
  ResetBudget budget(3, 2);
  const Clock::time_point t0 = Clock::now();
  CHECK(budget.spend(t0));
  CHECK(budget.spend(t0));
  CHECK(budget.spend(t0));
  CHECK_FALSE(budget.spend(t0));                                    // the burst is spent
  CHECK(budget.spend(t0 + std::chrono::milliseconds(500)));         // one token back after 1/rate
  CHECK_FALSE(budget.spend(t0 + std::chrono::milliseconds(600)));
  CHECK(budget.spend(t0 + std::chrono::seconds(100)));              // refilled, capped at the burst
  CHECK(budget.spend(t0 + std::chrono::seconds(100)));
  CHECK(budget.spend(t0 + std::chrono::seconds(100)));
  CHECK_FALSE(budget.spend(t0 + std::chrono::seconds(100)));
}
