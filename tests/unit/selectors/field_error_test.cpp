#include "cache/selectors/field_error.h"

#include <doctest/doctest.h>

#include <string>

using cache::FieldError;

TEST_CASE("E4: integers parse like strconv.ParseInt with its exact error texts") {
  std::string error;
  CHECK(cache::parseGoInt64("500", &error) == 500);
  CHECK(cache::parseGoInt64("-42", &error) == -42);
  CHECK(cache::parseGoInt64("+7", &error) == 7);
  CHECK(cache::parseGoInt64("9223372036854775807", &error) == INT64_MAX);
  CHECK(cache::parseGoInt64("-9223372036854775808", &error) == INT64_MIN);
  struct Row {
    const char* input;
    const char* error;
  };
  for (const Row& row : {Row{"abc", "strconv.ParseInt: parsing \"abc\": invalid syntax"},
                         Row{"", "strconv.ParseInt: parsing \"\": invalid syntax"},
                         Row{"-", "strconv.ParseInt: parsing \"-\": invalid syntax"},
                         Row{"1_000", "strconv.ParseInt: parsing \"1_000\": invalid syntax"},
                         Row{"9223372036854775808", "strconv.ParseInt: parsing \"9223372036854775808\": value out of range"},
                         Row{"-9223372036854775809", "strconv.ParseInt: parsing \"-9223372036854775809\": value out of range"},
                         Row{"1e3", "strconv.ParseInt: parsing \"1e3\": invalid syntax"}}) {
    CAPTURE(row.input);
    CHECK_FALSE(cache::parseGoInt64(row.input, &error).has_value());
    CHECK(error == row.error);
  }
}

TEST_CASE("Go quoting escapes quotes, control bytes, invalid UTF-8 and non-printable runes") {
  CHECK(cache::goQuote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(cache::goQuote("\n\t\x01\x7f") == "\"\\n\\t\\x01\\x7f\"");
  CHECK(cache::goQuote("\xff") == "\"\\xff\"");
  CHECK(cache::goQuote("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
  CHECK(cache::goQuote("\xc2\x85") == "\"\\u0085\"");
  CHECK(cache::goQuote(std::string_view("\0", 1)) == "\"\\x00\"");
}

TEST_CASE("R4: field errors render like apimachinery's field.Error and aggregate") {
  auto forbidden = FieldError::forbidden("resourceVersionMatch", "nope");
  CHECK(forbidden.message() == "resourceVersionMatch: Forbidden: nope");
  CHECK(forbidden.causeType() == "FieldValueForbidden");
  auto unsupported = FieldError::notSupported("resourceVersionMatch", "Foo", {"Exact", "NotOlderThan", ""});
  CHECK(unsupported.body() == "Unsupported value: \"Foo\": supported values: \"Exact\", \"NotOlderThan\", \"\"");
  CHECK(unsupported.causeType() == "FieldValueNotSupported");
  CHECK(cache::aggregateErrors({forbidden}) == forbidden.message());
  CHECK(cache::aggregateErrors({forbidden, unsupported, forbidden}) ==
        "[" + forbidden.message() + ", " + unsupported.message() + "]");
  CHECK(cache::aggregateErrors({}).empty());
}
