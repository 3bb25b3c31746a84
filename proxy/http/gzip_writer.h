#pragma once
// Response compression the way the apiserver does it (contract N1): gzip when the
// client accepts it and the body is at least 128 KiB, at the apiserver's level 1
// (fast; lists are large and the CPU is better spent elsewhere). Streaming: the body
// is compressed piece by piece as it is written.
//
// A gzip member is a header, deflate blocks and a trailer (CRC-32 and length of the
// plain bytes). Deflate blocks that end on a byte boundary and do not look back past
// their own start can be placed one after another, so a body can mix bytes deflated
// now with runs deflated once and kept (cache/packing/compressed_run.h, made by compressRun):
// the writer flushes to a byte boundary before a run, restarts its window after it,
// and combines the run's CRC into its own instead of reading the run's bytes again.
//
// Not thread-safe; one per response.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/packing/compressed_run.h"
#include "watch/fanout/frame.h"

namespace proxy {

inline constexpr size_t kGzipThresholdBytes = 128 * 1024;

// True when kube-apiserver would gzip for this Accept-Encoding value
// (responsewriters.ContentEncodingSupported): one of its comma-separated tokens is
// exactly "gzip".
bool acceptsGzip(std::string_view accept_encoding);

// Who an answer from memory is compressed for.
struct GzipPolicy {
  bool gateway = false;        // gateway clients get the apiserver's compression
  bool gzip_loopback = false;  // --gzip-loopback: a sidecar's loopback clients too
};

// Whether an answer of `size` bytes is gzip'd: the apiserver's rule (N1: the client
// accepts gzip, the body is at least 128 KiB), except for a loopback client of a sidecar:
// its bytes never cross a network, so compressing would only cost both sides CPU (the
// plain answer is valid for a client that accepts gzip too).
bool shouldGzip(size_t size, std::string_view accept_encoding, std::string_view client_ip, GzipPolicy policy);
// The same without the size rule (a gzip'd watch-list streams; its size is unknown).
bool mayGzip(std::string_view accept_encoding, std::string_view client_ip, GzipPolicy policy);

// `plain` deflated on its own, ready to be spliced into any GzipWriter's output.
cache::CompressedRun compressRun(std::string_view plain);

// One whole gzip member of `pieces`, laid out as Go's gzip.Writer writes one that is
// flushed and then closed (kube-apiserver's perFlushGzipWriter, one per watch flush): the
// data, a sync flush (00 00 ff ff), an empty final block, the trailer.
// The flush lets a streaming reader return every event before it meets the member's end.
std::string gzipFlushedMember(std::span<const std::string_view> pieces);
// A shared watch frame as a gzip'd watch-list sends it: a flushed member of its own, built
// once per frame (watch::Frame::compressed) for every watcher that sends the frame.
const std::string& gzipMemberOf(const watch::Frame& frame);

// Bytes on the wire and the frame that keeps them alive.
struct WirePiece {
  watch::FrameConstSharedPtr owner;
  std::string_view bytes;
};

// Appends the wire form of a gzip'd watch's `frames` (W9) to `out`: each shared frame its
// own member (gzipMemberOf), each run of the watch's own frames (its initial state, its
// replay, its bookmarks) one member, compressed here. So every flush ends on a whole
// member, as kube-apiserver's perFlushGzipWriter closes its writer at each flush (an idle
// watch holds no deflate state); gzip readers, Go's included, read a body of members as
// one stream. Each member is flushed before it ends: a gzip reader (Go's) returns the
// events before it meets the member's end, after which it waits for the next member's
// header; ended without the flush, a batch's last events would wait in the client for the
// next flush (seen: a watch-list's end bookmark never reached client-go).
void appendGzipPieces(std::span<const watch::FrameConstSharedPtr> frames, std::vector<WirePiece>& out);

class GzipWriter {
 public:
  GzipWriter();
  ~GzipWriter();
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;

  // Appends the compressed form of `in` to `out`; `finish` ends the gzip member.
  void write(std::string_view in, std::string& out, bool finish);
  // Appends what deflate holds back, ending on a byte boundary (a sync flush): a reader
  // gets everything written so far before anything else arrives. Go's gzip.Writer.Flush.
  void flush(std::string& out);
  // Appends a run made by compressRun() to `out`, as if its plain bytes were written.
  void writeRun(const cache::CompressedRun& run, std::string& out);

 private:
  void deflateInto(std::string& out, int flush);

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace proxy
