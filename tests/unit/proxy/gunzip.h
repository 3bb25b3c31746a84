#pragma once
// Test helpers: inflates one gzip member, checking that it ends where the input ends, or a
// body of whole members one after another.

#include <string>
#include <vector>

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

// Each member of `in` inflated, in order; every member must be whole.
inline std::vector<std::string> gunzipMembers(const std::string& in) {
  std::vector<std::string> members;
  size_t at = 0;
  while (at < in.size()) {
    z_stream z{};
    REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
    std::string out(1 << 20, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + at));
    z.avail_in = static_cast<uInt>(in.size() - at);
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&z, Z_FINISH);
    REQUIRE(rc == Z_STREAM_END);
    out.resize(out.size() - z.avail_out);
    at = in.size() - z.avail_in;
    inflateEnd(&z);
    members.push_back(std::move(out));
  }
  return members;
}

}  // namespace proxy::testing
