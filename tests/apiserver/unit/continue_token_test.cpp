#include <doctest/doctest.h>

#include "tests/apiserver/semantics.h"
#include "test_util.h"

using namespace testapi;
using namespace testapi::test;

namespace {

std::string b64(std::string_view json) {
  // Built through the encoder's own alphabet check: tokens below are literal.
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= json.size(); i += 3) {
    unsigned v = (unsigned char)json[i] << 16 | (unsigned char)json[i + 1] << 8 | (unsigned char)json[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += alphabet[(v >> s) & 63];
  }
  if (json.size() - i == 1) {
    unsigned v = (unsigned char)json[i] << 16;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
  } else if (json.size() - i == 2) {
    unsigned v = (unsigned char)json[i] << 16 | (unsigned char)json[i + 1] << 8;
    for (int s = 18; s >= 6; s -= 6) out += alphabet[(v >> s) & 63];
  }
  return out;
}

std::string decodeError(std::string_view token) {
  auto r = decodeContinue(token);
  auto& e = errorOf(r);
  CHECK(e.code == 400);
  CHECK(e.reason == "BadRequest");
  return e.message;
}

}  // namespace

TEST_CASE("Continue tokens are encoded byte for byte like the apiserver's (P2)") {
  CHECK(encodeContinue(12345, std::string("default/nginx-1\0", 16)) ==
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0IjoiZGVmYXVsdC9uZ2lueC0xXHUwMDAwIn0");
  CHECK(encodeContinue(12345, std::string("nginx-1\0", 8)) ==
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0IjoibmdpbngtMVx1MDAwMCJ9");
  CHECK(encodeContinue(-1, std::string("default/nginx-1\0", 16)) ==
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiZGVmYXVsdC9uZ2lueC0xXHUwMDAwIn0");
}

TEST_CASE("Tokens of the watch cache's pages start with '/', as kube-apiserver 1.37 writes them (P2)") {
  // The real apiserver's tokens for an all-namespaces list and a namespaced one.
  CHECK(encodeContinue(273, std::string("/load-0/cm-0\0", 13)) ==
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjczLCJzdGFydCI6Ii9sb2FkLTAvY20tMFx1MDAwMCJ9");
  CHECK(encodeContinue(273, std::string("/pod-55\0", 8)) ==
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjczLCJzdGFydCI6Ii9wb2QtNTVcdTAwMDAifQ");
}

TEST_CASE("A start with and without the leading '/' names the same position (P2)") {
  for (const char* start : {R"(/pod-55\u0000)", R"(pod-55\u0000)"}) {
    CAPTURE(start);
    auto t = valueOf(decodeContinue(b64(std::string(R"J({"v":"meta.k8s.io/v1","rv":9,"start":")J") + start + "\"}")));
    CHECK(t.rv == 9);
    CHECK(t.start == std::string("pod-55\0", 7));
  }
  CHECK(valueOf(decodeContinue(b64(R"J({"v":"meta.k8s.io/v1","rv":9,"start":"/load-0/cm-0\u0000"})J"))).start ==
        std::string("load-0/cm-0\0", 12));
  // "/" is clean: the whole list, from its first key.
  CHECK(valueOf(decodeContinue(b64(R"J({"v":"meta.k8s.io/v1","rv":9,"start":"/"})J"))).start.empty());
}

TEST_CASE("Continue tokens decode back to their rv and start key (P2)") {
  auto t = valueOf(decodeContinue("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0IjoiZGVmYXVsdC9uZ2lueC0xXHUwMDAwIn0"));
  CHECK(t.rv == 12345);
  CHECK(t.start == std::string("default/nginx-1\0", 16));
  auto latest = valueOf(decodeContinue(encodeContinue(-1, std::string("a\0", 2))));
  CHECK(latest.rv == -1);
}

TEST_CASE("Every continue token defect is a 400 with the storage layer's text (P3)") {
  SUBCASE("not base64url") {
    CHECK(decodeError("eyJ2I=") == "invalid continue token: continue key is not valid: illegal base64 data at input byte 5");
    CHECK(decodeError("ab+d") == "invalid continue token: continue key is not valid: illegal base64 data at input byte 2");
    CHECK(decodeError("abcde") == "invalid continue token: continue key is not valid: illegal base64 data at input byte 4");
  }
  SUBCASE("not JSON") {
    CHECK(decodeError(b64("hello")) ==
          "invalid continue token: continue key is not valid: invalid character 'h' looking for beginning of value");
    CHECK(decodeError(b64("{\"v\":")) == "invalid continue token: continue key is not valid: unexpected end of JSON input");
    CHECK(decodeError(b64("[1]")) ==
          "invalid continue token: continue key is not valid: json: cannot unmarshal array into Go value of type "
          "storage.continueToken");
    CHECK(decodeError(b64(R"J({"v":"meta.k8s.io/v1","rv":"1","start":"a"})J")) ==
          "invalid continue token: continue key is not valid: json: cannot unmarshal string into Go struct field "
          "continueToken.rv of type int64");
  }
  SUBCASE("rv is zero or missing") {
    CHECK(decodeError(b64(R"J({"v":"meta.k8s.io/v1","rv":0,"start":"a\u0000"})J")) ==
          "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version "
          "meta.k8s.io/v1)");
    CHECK(decodeError(b64(R"J({"v":"meta.k8s.io/v1","start":"a"})J")) ==
          "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version "
          "meta.k8s.io/v1)");
  }
  SUBCASE("empty start") {
    CHECK(decodeError(b64(R"J({"v":"meta.k8s.io/v1","rv":5,"start":""})J")) ==
          "invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)");
  }
  SUBCASE("start is not a clean path") {
    CHECK(decodeError(b64(R"J({"v":"meta.k8s.io/v1","rv":5,"start":"../secrets/x"})J")) ==
          "invalid continue token: continue key is not valid: ../secrets/x");
    CHECK(decodeError(b64(R"J({"v":"meta.k8s.io/v1","rv":5,"start":"a//b"})J")) ==
          "invalid continue token: continue key is not valid: a//b");
    CHECK(decodeError(b64(R"J({"v":"meta.k8s.io/v1","rv":5,"start":"a/"})J")) ==
          "invalid continue token: continue key is not valid: a/");
    // With the leading '/', path.Clean still has to leave the key as it is; the error
    // quotes the start as sent.
    for (const char* start : {"//a", "/a/", "/../x", "/./a", "/a/../b", "/a//b", "/."}) {
      CAPTURE(start);
      CHECK(decodeError(b64(std::string(R"J({"v":"meta.k8s.io/v1","rv":5,"start":")J") + start + "\"}")) ==
            std::string("invalid continue token: continue key is not valid: ") + start);
    }
  }
  SUBCASE("unknown version") {
    CHECK(decodeError(b64(R"J({"v":"meta.k8s.io/v2","rv":5,"start":"a"})J")) ==
          "invalid continue token: continue key is not valid: server does not recognize this encoded version "
          "meta.k8s.io/v2");
    CHECK(decodeError(b64(R"J({})J")) ==
          "invalid continue token: continue key is not valid: server does not recognize this encoded version ");
  }
}

TEST_CASE("Continue token members match case-insensitively like encoding/json (P2)") {
  auto t = valueOf(decodeContinue(b64(R"J({"V":"meta.k8s.io/v1","RV":7,"Start":"x\u0000","extra":1})J")));
  CHECK(t.rv == 7);
  CHECK(t.start == std::string("x\0", 2));
}
