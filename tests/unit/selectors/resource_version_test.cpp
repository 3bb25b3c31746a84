#include "cache/resource_version.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using cache::ResourceVersion;

TEST_CASE("R1: resource versions parse as unsigned decimal 64-bit integers and compare numerically") {
  CHECK(ResourceVersion::parse("12345") == ResourceVersion(12345));
  CHECK(ResourceVersion::parse("0") == ResourceVersion(0));
  CHECK(ResourceVersion::parse("18446744073709551615") == ResourceVersion(UINT64_MAX));
  CHECK(ResourceVersion(9) < ResourceVersion(10));
  CHECK(ResourceVersion(10).toString() == "10");
  CHECK(ResourceVersion().isZero());
  for (const char* bad : {"", "abc", "-1", "+1", " 1", "1 ", "1.0", "0x10", "18446744073709551616"}) {
    CAPTURE(bad);
    CHECK_FALSE(ResourceVersion::parse(bad).has_value());
  }
}

TEST_CASE("R6: malformed resource versions produce strconv's wording") {
  struct Row {
    const char* rv;
    const char* error;
  };
  const std::vector<Row> rows{
      {"abc", "strconv.ParseUint: parsing \"abc\": invalid syntax"},
      {"", "strconv.ParseUint: parsing \"\": invalid syntax"},
      {"-5", "strconv.ParseUint: parsing \"-5\": invalid syntax"},
      {"99999999999999999999", "strconv.ParseUint: parsing \"99999999999999999999\": value out of range"},
      {"99999999999999999999x", "strconv.ParseUint: parsing \"99999999999999999999x\": value out of range"},
      {"1\"2", "strconv.ParseUint: parsing \"1\\\"2\": invalid syntax"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.rv);
    CHECK(ResourceVersion::parseError(row.rv) == row.error);
  }
  CHECK(ResourceVersion::parseError("42").empty());
  CHECK(ResourceVersion::listBadRequestMessage("abc") ==
        "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": "
        "invalid syntax");
  CHECK(ResourceVersion::invalidMessage("abc") ==
        "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax");
}
