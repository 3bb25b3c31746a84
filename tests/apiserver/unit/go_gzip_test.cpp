// gzip as kube-apiserver writes it (N1, W9 WatchListCompression): which Accept-Encoding
// counts, and the bytes around each member (captured from kube-apiserver 1.37.2).
#include <doctest/doctest.h>

#include <zlib.h>

#include <string>

#include "tests/apiserver/http/go_gzip.h"
#include "stream_test_util.h"

namespace testapi {
using test::inflateGzipMember;

TEST_CASE("N1/W9 gzip: only a comma-separated token that is exactly gzip accepts it") {
  for (const char* yes : {"gzip", " gzip ", "gzip, deflate", "deflate, gzip", "br,gzip"}) CHECK_MESSAGE(acceptsGzip(yes), yes);
  for (const char* no : {"", "gzip;q=1.0", "GZIP", "*", "x-gzip", "deflate"}) CHECK_MESSAGE(!acceptsGzip(no), no);
}

TEST_CASE("W9 gzip: a member has Go's level-1 header and ends in a sync flush and an empty final stored block") {
  const std::string data = R"({"type":"ADDED","object":{"kind":"ConfigMap"}})" "\n";
  const std::string m = gzipMember(data);
  CHECK(m.substr(0, 10) == std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\xff", 10));
  CHECK(m.substr(m.size() - 17, 9) == std::string("\x00\x00\xff\xff\x01\x00\x00\xff\xff", 9));
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
  std::string trailer;
  for (int i = 0; i < 4; ++i) trailer += static_cast<char>((crc >> (8 * i)) & 0xff);
  for (int i = 0; i < 4; ++i) trailer += static_cast<char>((data.size() >> (8 * i)) & 0xff);
  CHECK(m.substr(m.size() - 8) == trailer);
  size_t used = 0;
  CHECK(inflateGzipMember(m, used) == data);
  CHECK(used == m.size());
}

TEST_CASE("W9 gzip: members written one after the other read back as one stream, as Go's reader takes them") {
  const std::string stream = gzipMember("first\n") + gzipMember("second\n");
  size_t used = 0;
  CHECK(inflateGzipMember(stream, used) == "first\n");
  size_t used2 = 0;
  CHECK(inflateGzipMember(stream.substr(used), used2) == "second\n");
  CHECK(used + used2 == stream.size());
}

}  // namespace testapi
