#include "tests/apiserver/http/go_gzip.h"

#include <zlib.h>

#include "tests/apiserver/status/status_util.h"

namespace testapi {
namespace {

// gzipContentEncodingLevel: "uses least CPU compared to higher levels, yet offers similar
// compression ratios" (responsewriters/compression.go).
constexpr int kLevel = Z_BEST_SPEED;
constexpr int kGzipWindowBits = 15 + 16;  // 32 KiB window, gzip wrapper
constexpr int kMemLevel = 8;              // zlib's default
constexpr unsigned char kFinalEmptyStoredBlock[] = {0x01, 0x00, 0x00, 0xff, 0xff};

void appendLittleEndian32(std::string& out, uLong v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

bool acceptsGzip(std::string_view accept_encoding) {
  while (!accept_encoding.empty()) {
    const auto comma = accept_encoding.find(',');
    if (goTrimSpace(accept_encoding.substr(0, comma)) == "gzip") return true;
    if (comma == std::string_view::npos) break;
    accept_encoding.remove_prefix(comma + 1);
  }
  return false;
}

std::string gzipMember(std::string_view data) {
  z_stream zs{};
  deflateInit2(&zs, kLevel, Z_DEFLATED, kGzipWindowBits, kMemLevel, Z_DEFAULT_STRATEGY);
  // Go's header: no mtime, no name, OS "unknown" (zlib would write 3, Unix). zlib derives
  // XFL 4 from level 1, as Go does.
  gz_header header{};
  header.os = 255;
  deflateSetHeader(&zs, &header);
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())) + 16);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_SYNC_FLUSH);
  out.resize(zs.total_out);
  // zlib's Z_FINISH would end with a fixed-Huffman empty block (03 00); Go's Close writes an
  // empty stored block, so the stream is ended by hand. deflateEnd reports the unfinished
  // stream (Z_DATA_ERROR), which is expected here.
  deflateEnd(&zs);
  out.append(reinterpret_cast<const char*>(kFinalEmptyStoredBlock), sizeof kFinalEmptyStoredBlock);
  appendLittleEndian32(out, crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
  appendLittleEndian32(out, static_cast<uLong>(data.size() & 0xffffffffu));
  return out;
}

}  // namespace testapi
