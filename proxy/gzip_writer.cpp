#include "proxy/gzip_writer.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <zlib.h>

namespace proxy {

struct GzipWriter::State {
  z_stream z{};
};

bool acceptsGzip(std::string_view accept_encoding) {
  while (!accept_encoding.empty()) {
    const size_t comma = accept_encoding.find(',');
    std::string_view item = accept_encoding.substr(0, comma);
    accept_encoding = comma == std::string_view::npos ? std::string_view{} : accept_encoding.substr(comma + 1);
    const size_t semi = item.find(';');
    std::string_view coding = item.substr(0, semi);
    while (!coding.empty() && coding.front() == ' ') coding.remove_prefix(1);
    while (!coding.empty() && coding.back() == ' ') coding.remove_suffix(1);
    std::string lowered(coding);
    std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lowered != "gzip") continue;
    if (semi != std::string_view::npos) {
      std::string_view params = item.substr(semi + 1);
      const size_t q = params.find("q=");
      if (q != std::string_view::npos && std::atof(std::string(params.substr(q + 2)).c_str()) <= 0) return false;
    }
    return true;
  }
  return false;
}

GzipWriter::GzipWriter() : state_(std::make_unique<State>()) {
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&state_->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
}

GzipWriter::~GzipWriter() { deflateEnd(&state_->z); }

void GzipWriter::write(std::string_view in, std::string& out, bool finish) {
  z_stream& z = state_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  const int flush = finish ? Z_FINISH : Z_NO_FLUSH;
  while (true) {
    const size_t old = out.size();
    const size_t room = std::max<size_t>(deflateBound(&z, z.avail_in), 16 * 1024);
    out.resize(old + room);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + old);
    z.avail_out = static_cast<uInt>(room);
    const int rc = deflate(&z, flush);
    out.resize(old + (room - z.avail_out));
    if (rc == Z_STREAM_END) return;
    if (rc != Z_OK && rc != Z_BUF_ERROR) throw std::runtime_error("deflate failed");
    if (!finish && z.avail_in == 0 && z.avail_out != 0) return;
  }
}

}  // namespace proxy
