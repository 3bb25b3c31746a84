#include "proxy/query_params.h"

#include <doctest/doctest.h>

#include <string>

#include "cache/query/query_values.h"

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

TEST_CASE("Paths sent upstream are escaped as Go's URL.EscapedPath escapes them") {
  CHECK(cache::escapePath("/api/v1/namespaces/default/pods") == "/api/v1/namespaces/default/pods");
  CHECK(cache::escapePath("/api/v1/namespaces/a\r\nb/pods") == "/api/v1/namespaces/a%0D%0Ab/pods");
  CHECK(cache::escapePath("/x y%z?#\"<>\\^`{|}") == "/x%20y%25z%3F%23%22%3C%3E%5C%5E%60%7B%7C%7D");
  CHECK(cache::escapePath("/-._~$&+,/:;=@") == "/-._~$&+,/:;=@");
  CHECK(cache::escapePath("/\xc3\xa9\x7f") == "/%C3%A9%7F");
  for (const std::string path : {"/a b", "/%", "/\r\n", "/\xff/x", "/+"}) {
    CHECK(cache::pathUnescape(cache::escapePath(path)) == path);
  }
}
