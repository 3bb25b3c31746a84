#pragma once
// Response compression the way the apiserver does it (contract N1): gzip when the
// client accepts it and the body is at least 128 KiB, at the apiserver's level 1
// (fast; lists are large and the CPU is better spent elsewhere). Streaming: the body
// is compressed piece by piece as it is written.
//
// Not thread-safe; one per response.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace proxy {

inline constexpr size_t kGzipThresholdBytes = 128 * 1024;

// True when an Accept-Encoding value lists gzip with a non-zero quality.
bool acceptsGzip(std::string_view accept_encoding);

class GzipWriter {
 public:
  GzipWriter();
  ~GzipWriter();
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;

  // Appends the compressed form of `in` to `out`; `finish` ends the gzip member.
  void write(std::string_view in, std::string& out, bool finish);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace proxy
