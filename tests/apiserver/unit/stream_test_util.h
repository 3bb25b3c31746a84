#pragma once
// Helpers of the watch-stream tests: a WebSocket upgrade request and gzip members read back.
#include <doctest/doctest.h>

#include <zlib.h>

#include <string>

#include "tests/apiserver/http/http_types.h"

namespace testapi::test {

// The headers of a WebSocket upgrade as a browser-like client sends them (RFC 6455's key).
inline void addWebSocketUpgrade(HttpRequest& req) {
  req.headers["upgrade"] = "websocket";
  req.headers["connection"] = "Upgrade";
  req.headers["sec-websocket-key"] = "dGhlIHNhbXBsZSBub25jZQ==";
  req.headers["sec-websocket-version"] = "13";
  req.headers["origin"] = "http://localhost";
}

// Inflates the gzip member at the start of `in`; `used` receives its length.
inline std::string inflateGzipMember(const std::string& in, size_t& used) {
  z_stream zs{};
  inflateInit2(&zs, 15 + 16);
  std::string out(1 << 20, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(inflate(&zs, Z_FINISH) == Z_STREAM_END);
  used = zs.total_in;
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

}  // namespace testapi::test
