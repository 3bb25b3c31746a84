#include "proxy/http/gzip_writer.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <vector>

#include <zlib.h>

namespace proxy {
namespace {

// What zlib writes for a level-1 gzip member (RFC 1952): no name, no mtime, XFL 4
// (fastest), OS 3 (Unix).
constexpr std::string_view kGzipHeader{"\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\x03", 10};

// Raw deflate (negative window bits): the gzip header and trailer are ours to write,
// so that spliced runs can be counted into the trailer.
void initRawDeflate(z_stream& z) {
  if (deflateInit2(&z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
}

// Runs `flush` on `z` over what it was given, appending the output to `out`.
void deflateAll(z_stream& z, std::string& out, int flush) {
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
    // Done when the input is used up and deflate did not fill the room (a flush that
    // filled it may have more to write).
    if (z.avail_in == 0 && z.avail_out != 0) return;
  }
}

void appendLittleEndian32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

struct GzipWriter::State {
  z_stream z{};
  uint32_t crc = 0;
  uint64_t size = 0;
  bool header_written = false;
  bool pending = false;  // bytes given to z since the last byte-aligned flush
};

bool acceptsGzip(std::string_view accept_encoding) {
  // responsewriters.ContentEncodingSupported: a comma-separated token that is exactly
  // "gzip" once spaces are trimmed; parameters (a q-value) and other spellings do not count.
  while (!accept_encoding.empty()) {
    const size_t comma = accept_encoding.find(',');
    std::string_view token = accept_encoding.substr(0, comma);
    accept_encoding = comma == std::string_view::npos ? std::string_view{} : accept_encoding.substr(comma + 1);
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.front()))) token.remove_prefix(1);
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.remove_suffix(1);
    if (token == "gzip") return true;
  }
  return false;
}

bool shouldGzip(size_t size, std::string_view accept_encoding, std::string_view client_ip, GzipPolicy policy) {
  return size >= kGzipThresholdBytes && mayGzip(accept_encoding, client_ip, policy);
}

bool mayGzip(std::string_view accept_encoding, std::string_view client_ip, GzipPolicy policy) {
  if (!acceptsGzip(accept_encoding)) return false;
  if (policy.gateway || policy.gzip_loopback) return true;
  const bool loopback = client_ip.starts_with("127.") || client_ip == "::1" || client_ip.starts_with("::ffff:127.");
  return !loopback;
}

cache::CompressedRun compressRun(std::string_view plain) {
  z_stream z{};
  initRawDeflate(z);
  cache::CompressedRun run;
  run.deflate.reserve(plain.size() / 4 + 64);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  // A sync flush ends on a byte boundary without a final block.
  try {
    deflateAll(z, run.deflate, Z_SYNC_FLUSH);
  } catch (...) {
    deflateEnd(&z);
    throw;
  }
  deflateEnd(&z);
  run.deflate.shrink_to_fit();
  run.crc32 = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(plain.data()), static_cast<uInt>(plain.size())));
  run.plain_size = plain.size();
  return run;
}

std::string gzipFlushedMember(std::span<const std::string_view> pieces) {
  std::string out;
  GzipWriter member;
  for (std::string_view piece : pieces) member.write(piece, out, false);
  member.flush(out);
  member.write({}, out, true);
  return out;
}

const std::string& gzipMemberOf(const watch::Frame& frame) {
  return frame.compressed([](std::string_view plain) { return gzipFlushedMember(std::span(&plain, 1)); });
}

void appendGzipPieces(std::span<const watch::FrameConstSharedPtr> frames, std::vector<WirePiece>& out) {
  std::vector<std::string_view> own;
  auto endOwnRun = [&] {
    if (own.empty()) return;
    auto member = watch::makeFrame(gzipFlushedMember(own));
    own.clear();
    const std::string_view bytes = member->bytes();
    out.push_back(WirePiece{std::move(member), bytes});
  };
  for (const auto& frame : frames) {
    if (!frame->shared()) {
      own.push_back(frame->bytes());
      continue;
    }
    endOwnRun();
    out.push_back(WirePiece{frame, gzipMemberOf(*frame)});
  }
  endOwnRun();
}

GzipWriter::GzipWriter() : state_(std::make_unique<State>()) { initRawDeflate(state_->z); }

GzipWriter::~GzipWriter() { deflateEnd(&state_->z); }

void GzipWriter::deflateInto(std::string& out, int flush) {
  if (!state_->header_written) {
    out += kGzipHeader;
    state_->header_written = true;
  }
  deflateAll(state_->z, out, flush);
}

void GzipWriter::write(std::string_view in, std::string& out, bool finish) {
  State& s = *state_;
  // Only for bytes: crc32(crc, Z_NULL, 0) returns zlib's initial value, not `crc`.
  if (!in.empty()) {
    s.crc = static_cast<uint32_t>(crc32(s.crc, reinterpret_cast<const Bytef*>(in.data()), static_cast<uInt>(in.size())));
  }
  s.size += in.size();
  s.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  s.z.avail_in = static_cast<uInt>(in.size());
  s.pending = s.pending || !in.empty();
  deflateInto(out, finish ? Z_FINISH : Z_NO_FLUSH);
  if (!finish) return;
  appendLittleEndian32(out, s.crc);
  appendLittleEndian32(out, static_cast<uint32_t>(s.size));  // ISIZE: the size modulo 2^32
}

void GzipWriter::flush(std::string& out) {
  state_->z.avail_in = 0;
  deflateInto(out, Z_SYNC_FLUSH);
}

void GzipWriter::writeRun(const cache::CompressedRun& run, std::string& out) {
  State& s = *state_;
  if (s.pending) {
    // End what was written so far on a byte boundary, then forget it: the run's
    // distances count from its own start, and what follows must not reach back into
    // bytes the window never saw.
    s.z.avail_in = 0;
    deflateInto(out, Z_SYNC_FLUSH);
    s.pending = false;
  } else if (!s.header_written) {
    out += kGzipHeader;
    s.header_written = true;
  }
  out += run.deflate;
  if (deflateReset(&s.z) != Z_OK) throw std::runtime_error("deflateReset failed");
  s.crc = static_cast<uint32_t>(crc32_combine(s.crc, run.crc32, static_cast<z_off_t>(run.plain_size)));
  s.size += run.plain_size;
}

}  // namespace proxy
