#include "proxy/query_params.h"

#include <doctest/doctest.h>

using proxy::parseBoolParam;

TEST_CASE("Boolean query parameters parse like the apiserver's codec (E4)") {
  CHECK_FALSE(parseBoolParam(std::nullopt));
  for (const char* f : {"0", "false", "False", "FALSE", "fAlSe"}) {
    CAPTURE(f);
    CHECK_FALSE(parseBoolParam(std::string_view(f)));
  }
  for (const char* t : {"1", "t", "T", "true", "True", "TRUE", "", "yes", "anything"}) {
    CAPTURE(t);
    CHECK(parseBoolParam(std::string_view(t)));
  }
}
