#pragma once
// Test helper: inflates one gzip member, checking that it ends where the input ends.

#include <string>

#include <doctest/doctest.h>
#include <zlib.h>

namespace proxy::testing {

inline std::string gunzip(const std::string& in) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    const size_t old = out.size();
    out.resize(old + (1 << 20));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + old);
    z.avail_out = 1 << 20;
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(old + ((1 << 20) - z.avail_out));
  }
  CHECK(rc == Z_STREAM_END);  // a valid member, CRC and length checked by zlib
  CHECK(z.avail_in == 0);
  inflateEnd(&z);
  return out;
}

}  // namespace proxy::testing
