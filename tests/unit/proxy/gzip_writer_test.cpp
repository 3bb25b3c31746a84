#include "proxy/gzip_writer.h"

#include <doctest/doctest.h>
#include <zlib.h>

using namespace proxy;

namespace {

std::string gunzip(const std::string& in) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
  std::string out(1 << 22, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

}  // namespace

TEST_CASE("A body compressed in pieces inflates to the original (N1)") {
  std::string original;
  for (int i = 0; i < 20000; ++i) original += R"({"metadata":{"name":"pod-)" + std::to_string(i) + R"("}},)";
  GzipWriter gz;
  std::string compressed;
  for (size_t pos = 0; pos < original.size(); pos += 7000) gz.write(original.substr(pos, 7000), compressed, false);
  gz.write("", compressed, true);
  CHECK(compressed.size() < original.size() / 4);
  CHECK(gunzip(compressed) == original);
}

TEST_CASE("gzip is used only when the client accepts it") {
  CHECK(acceptsGzip("gzip"));
  CHECK(acceptsGzip("gzip, deflate"));
  CHECK(acceptsGzip("deflate, GZIP"));
  CHECK_FALSE(acceptsGzip("identity"));
  CHECK_FALSE(acceptsGzip(""));
  CHECK_FALSE(acceptsGzip("gzip;q=0"));
}
