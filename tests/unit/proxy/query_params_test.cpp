#include "proxy/query_params.h"

#include <doctest/doctest.h>

using proxy::parseBoolParam;
using proxy::QueryParams;

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

TEST_CASE("QueryParams decodes percent escapes and plus signs and keeps the first value") {
  QueryParams q("labelSelector=app%3Dweb%2Ctier+in+(a)&watch&limit=5&limit=7&empty=");
  CHECK(q.get("labelSelector") == "app=web,tier in (a)");
  CHECK(q.get("watch") == "");
  CHECK(q.get("limit") == "5");
  CHECK(q.get("empty") == "");
  CHECK_FALSE(q.get("missing").has_value());
  CHECK(proxy::unescapeQueryComponent("bad%zzescape%4") == "bad%zzescape%4");
}
