#include "config/duration.h"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace std::chrono_literals;
using config::parseDuration;

TEST_CASE("Durations accept Go's units and compound forms") {
  CHECK(parseDuration("5s") == 5s);
  CHECK(parseDuration("250ms") == 250ms);
  CHECK(parseDuration("1m30s") == 90s);
  CHECK(parseDuration("2h45m") == 165min);
  CHECK(parseDuration("1.5h") == 90min);
  CHECK(parseDuration(".5s") == 500ms);
  CHECK(parseDuration("1.s") == 1s);
  CHECK(parseDuration("10us") == 10us);
  CHECK(parseDuration("10\xC2\xB5s") == 10us);
  CHECK(parseDuration("7ns") == 7ns);
  CHECK(parseDuration("+3s") == 3s);
  CHECK(parseDuration("-3s") == -3s);
}

TEST_CASE("Decimal fractions are exact, not rounded through floating point") {
  CHECK(parseDuration("0.1s") == 100ms);
  CHECK(parseDuration("0.3s") == 300ms);
  CHECK(parseDuration("1.001s") == 1001ms);
  CHECK(parseDuration("0.000000001s") == 1ns);
  CHECK(parseDuration("1.0000000000000000000001s") == 1s);
}

TEST_CASE("A bare zero is the only duration without a unit") {
  CHECK(parseDuration("0") == 0s);
  CHECK(parseDuration("-0") == 0s);
  CHECK_THROWS_WITH_AS(parseDuration("5"), "missing unit in duration \"5\"", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseDuration("1m30"), "missing unit in duration \"1m30\"", std::invalid_argument);
}

TEST_CASE("Malformed durations are rejected with the reason") {
  CHECK_THROWS_WITH_AS(parseDuration("1d"), "unknown unit \"d\" in duration \"1d\"", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseDuration(""), "invalid duration \"\"", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseDuration("s"), "invalid duration \"s\"", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parseDuration("."), "invalid duration \".\"", std::invalid_argument);
  CHECK_THROWS_AS(parseDuration("5 s"), std::invalid_argument);
  CHECK_THROWS_AS(parseDuration("-"), std::invalid_argument);
}

TEST_CASE("Durations beyond the int64 nanosecond range are rejected") {
  CHECK(parseDuration("2562047h") == 2562047h);
  CHECK_THROWS_AS(parseDuration("9999999999h"), std::invalid_argument);
}
