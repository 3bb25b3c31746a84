#include "cache/query/continue_token.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using cache::ContinueToken;

// Test-side encoder, so that malformed JSON can be wrapped into a token.
std::string base64Url(std::string_view data) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : data) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      out.push_back(kAlphabet[(buffer >> (bits - 6)) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buffer << (6 - bits)) & 0x3F]);
  return out;
}

std::string decodeError(std::string_view token) {
  auto r = ContinueToken::decode(token);
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

const std::string kPrefix = "invalid continue token: continue key is not valid: ";

}  // namespace

TEST_CASE("P2: tokens are byte-identical to kube-apiserver 1.37's, start key with its leading slash") {
  CHECK(ContinueToken::encode(12345, "default/nginx-1") == "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0IjoiL2RlZmF1bHQvbmdpbngtMVx1MDAwMCJ9");
  CHECK(ContinueToken::encode(12345, "nginx-1") == "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0IjoiL25naW54LTFcdTAwMDAifQ");
  // Tokens written without the slash (older servers, contract P2's examples) name the same key.
  auto old_form = ContinueToken::decode("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0IjoibmdpbngtMVx1MDAwMCJ9");
  REQUIRE(old_form.has_value());
  CHECK(old_form->start == std::string("nginx-1\0", 8));
  auto new_form = ContinueToken::decode("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0IjoiL25naW54LTFcdTAwMDAifQ");
  REQUIRE(new_form.has_value());
  CHECK(new_form->start == old_form->start);
}

TEST_CASE("P7: an expired continuation is re-issued with rv -1 and the same start") {
  auto old = ContinueToken::decode("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzNDUsInN0YXJ0IjoiL2RlZmF1bHQvbmdpbngtMVx1MDAwMCJ9");
  REQUIRE(old.has_value());
  auto fresh = ContinueToken::encodeStart(-1, old->start);
  CHECK(fresh == "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiL2RlZmF1bHQvbmdpbngtMVx1MDAwMCJ9");
  auto decoded = ContinueToken::decode(fresh);
  REQUIRE(decoded.has_value());
  CHECK(decoded->resource_version == -1);
  CHECK(decoded->atLatest());
  CHECK(decoded->start == std::string("default/nginx-1\0", 16));
}

TEST_CASE("P2: decode returns the list RV and the start key including its NUL") {
  auto t = ContinueToken::decode(ContinueToken::encode(987654321012, "ns-a/pod-<&>\"\\"));
  REQUIRE(t.has_value());
  CHECK(t->resource_version == 987654321012);
  CHECK(t->start == std::string("ns-a/pod-<&>\"\\") + '\0');
  CHECK_FALSE(t->atLatest());
  // Go escapes HTML characters in JSON strings.
  auto raw = ContinueToken::encode(1, "<");
  CHECK(raw == base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":1,\"start\":\"/\\u003c\\u0000\"}"));
}

TEST_CASE("P3: every defective token is a 400 with the apiserver's text") {
  struct Row {
    std::string token;
    std::string message;
  };
  const std::vector<Row> rows{
      {"!!!!", kPrefix + "illegal base64 data at input byte 0"},
      {"eyJ2Ijoi=", kPrefix + "illegal base64 data at input byte 8"},
      {"e", kPrefix + "illegal base64 data at input byte 0"},
      {"eyJ2I", kPrefix + "illegal base64 data at input byte 4"},
      {base64Url("not json"), kPrefix + "invalid character 'o' in literal null (expecting 'u')"},
      {base64Url(""), kPrefix + "unexpected end of JSON input"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\""), kPrefix + "unexpected end of JSON input"},
      {base64Url("x"), kPrefix + "invalid character 'x' looking for beginning of value"},
      {base64Url("{} x"), kPrefix + "invalid character 'x' after top-level value"},
      {base64Url("{\"rv\" 1}"), kPrefix + "invalid character '1' after object key"},
      {base64Url("{\"rv\":1 \"v\":1}"), kPrefix + "invalid character '\"' after object key:value pair"},
      {base64Url("{'v':1}"), kPrefix + "invalid character '\\'' looking for beginning of object key string"},
      {base64Url("[1 2]"), kPrefix + "invalid character '2' after array element"},
      {base64Url("{\"rv\":-x}"), kPrefix + "invalid character 'x' in numeric literal"},
      {base64Url("{\"rv\":1.}"), kPrefix + "invalid character '}' after decimal point in numeric literal"},
      {base64Url("{\"rv\":1e}"), kPrefix + "invalid character '}' in exponent of numeric literal"},
      {base64Url("{\"s\":\"\\q\"}"), kPrefix + "invalid character 'q' in string escape code"},
      {base64Url("{\"s\":\"\\u12x4\"}"), kPrefix + "invalid character 'x' in \\u hexadecimal character escape"},
      {base64Url(std::string("{\"s\":\"\x01\"}")), kPrefix + "invalid character '\\x01' in string literal"},
      {base64Url("{\"x\":[1,]}"), kPrefix + "invalid character ']' looking for beginning of value"},
      {base64Url("{\"x\":{\"a\" 1}}"), kPrefix + "invalid character '1' after object key"},
      {base64Url("{\"x\":[{},[[]],{\"a\":[1 2]}]}"), kPrefix + "invalid character '2' after array element"},
      {base64Url("{\"x\":{\"a\":1,}}"), kPrefix + "invalid character '}' looking for beginning of object key string"},
      {base64Url("{\"x\":[[1]"), kPrefix + "unexpected end of JSON input"},
      {base64Url("[]"), kPrefix + "json: cannot unmarshal array into Go value of type storage.continueToken"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":\"5\",\"start\":\"a\"}"),
       kPrefix + "json: cannot unmarshal string into Go struct field continueToken.rv of type int64"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":1.5,\"start\":\"a\"}"),
       kPrefix + "json: cannot unmarshal number 1.5 into Go struct field continueToken.rv of type int64"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":9223372036854775808,\"start\":\"a\"}"),
       kPrefix + "json: cannot unmarshal number 9223372036854775808 into Go struct field continueToken.rv of type int64"},
      {base64Url("{\"v\":1,\"rv\":5,\"start\":\"a\"}"),
       kPrefix + "json: cannot unmarshal number into Go struct field continueToken.v of type string"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":0,\"start\":\"a\\u0000\"}"),
       kPrefix + "incorrect encoded start resourceVersion (version meta.k8s.io/v1)"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\",\"start\":\"a\\u0000\"}"),
       kPrefix + "incorrect encoded start resourceVersion (version meta.k8s.io/v1)"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"\"}"),
       kPrefix + "encoded start key empty (version meta.k8s.io/v1)"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"../secrets\"}"), kPrefix + "../secrets"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"a//b\"}"), kPrefix + "a//b"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"a/./b\"}"), kPrefix + "a/./b"},
      {base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"a/\"}"), kPrefix + "a/"},
      {base64Url("{\"v\":\"meta.k8s.io/v2\",\"rv\":5,\"start\":\"a\"}"),
       kPrefix + "server does not recognize this encoded version meta.k8s.io/v2"},
      {base64Url("null"), kPrefix + "server does not recognize this encoded version "},
  };
  for (const auto& row : rows) {
    CAPTURE(row.token);
    CHECK(decodeError(row.token) == row.message);
  }
}

TEST_CASE("P3: decoding follows Go's JSON rules for keys, duplicates and escapes") {
  auto t = ContinueToken::decode(
      base64Url("{\"V\":\"meta.k8s.io/v1\",\"RV\":7,\"rv\":8,\"Start\":\"\\ud83d\\ude00x\\u0000\",\"other\":[1,{}]}"));
  REQUIRE(t.has_value());
  CHECK(t->resource_version == 8);
  CHECK(t->start == std::string("\xF0\x9F\x98\x80x") + '\0');
  auto folded = ContinueToken::decode(base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":2,\"\xC5\xBFtart\":\"b\"}"));
  REQUIRE(folded.has_value());
  CHECK(folded->start == "b");
  // Line breaks inside the base64 text are skipped like Go's decoder does.
  std::string token = ContinueToken::encode(3, "a");
  token.insert(4, "\r\n");
  CHECK(ContinueToken::decode(token).has_value());
  // A rooted start is accepted when already clean.
  CHECK(ContinueToken::decode(base64Url("{\"v\":\"meta.k8s.io/v1\",\"rv\":5,\"start\":\"/a\"}")).has_value());
}

TEST_CASE("P3: nesting beyond Go's depth limit is rejected without exhausting the stack") {
  std::string deep(20000, '[');
  auto error = decodeError(base64Url(deep));
  CHECK(error == kPrefix + "invalid character '[' exceeded max depth");
}
