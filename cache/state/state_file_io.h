#pragma once
// The byte-level pieces of state files (cache/state/state_file.h): the seal over the content
// (SHA-256, or HMAC-SHA256 with --state-key-file), a file descriptor owner, and the
// buffered writer and reader that seal what they pass on. Internal to state_file.cpp and
// its tests; not thread-safe (one file at a time).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace cache::state_io {

inline constexpr size_t kSealSize = 32;
using SealBytes = std::array<unsigned char, kSealSize>;

// SHA-256 of the content without a key; HMAC-SHA256 with one. Only the key makes the seal
// an authentication: anyone who can write the file can compute a SHA-256 too.
class Seal {
 public:
  // Null when OpenSSL cannot provide the algorithm.
  static std::unique_ptr<Seal> make(std::string_view key);
  virtual ~Seal() = default;
  virtual void update(const void* data, size_t size) = 0;
  virtual SealBytes finish() = 0;
};

// Compares in time independent of where the bytes first differ.
bool sameSeal(std::string_view stored, const SealBytes& computed);

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// Buffers output, seals it, and writes it in blocks.
class SealingWriter {
 public:
  SealingWriter(int fd, Seal& seal);

  void putU32(uint32_t v);
  void putU64(uint64_t v);
  void putString(std::string_view s);  // u32 length, bytes
  void put(std::string_view bytes);
  void putUnsealed(std::string_view bytes);
  bool flush();
  bool ok() const { return ok_; }
  int error() const { return error_; }
  uint64_t written() const { return written_; }

 private:
  int fd_;
  Seal& seal_;
  std::string buffer_;
  bool ok_ = true;
  int error_ = 0;
  uint64_t written_ = 0;
};

// Reads the sealed region [0, limit) of a file in blocks, sealing what it hands out.
class SealingReader {
 public:
  SealingReader(int fd, uint64_t limit, Seal& seal) : fd_(fd), limit_(limit), seal_(seal) {}

  // False when fewer than `n` bytes remain before the seal (or on a read error).
  bool read(size_t n, std::string& out);
  bool readU32(uint32_t& v);
  bool readU64(uint64_t& v);
  // The bytes after the sealed region (the stored seal), unsealed.
  bool readTrailer(std::string& out);
  uint64_t remaining() const { return limit_ - consumed_; }
  bool ioError() const { return io_error_; }

 private:
  bool fill();

  int fd_;
  uint64_t limit_;
  Seal& seal_;
  std::string buffer_;
  size_t pos_ = 0;
  uint64_t consumed_ = 0;
  std::string scratch_;
  bool io_error_ = false;
};

}  // namespace cache::state_io
