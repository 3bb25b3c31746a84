#include "cache/state_file.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

namespace cache {
namespace {

constexpr std::string_view kMagic = "KCPSTATE";
constexpr size_t kDigestSize = 32;
// Writes go out in blocks of this size: few syscalls, little memory.
constexpr size_t kBlockSize = 1 << 20;
// Identity strings are API names; anything longer is a corrupt length.
constexpr uint32_t kMaxNameLength = 4096;

std::string errnoText(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

struct DigestDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using Digest = std::unique_ptr<EVP_MD_CTX, DigestDeleter>;

Digest newSha256() {
  Digest digest(EVP_MD_CTX_new());
  if (!digest || EVP_DigestInit_ex(digest.get(), EVP_sha256(), nullptr) != 1) return nullptr;
  return digest;
}

std::array<unsigned char, kDigestSize> finish(EVP_MD_CTX* digest) {
  std::array<unsigned char, kDigestSize> out{};
  unsigned int size = 0;
  EVP_DigestFinal_ex(digest, out.data(), &size);
  return out;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// Buffers output, hashes it, and writes it in blocks.
class HashingWriter {
 public:
  HashingWriter(int fd, EVP_MD_CTX* digest) : fd_(fd), digest_(digest) { buffer_.reserve(kBlockSize); }

  void putU32(uint32_t v) {
    unsigned char b[4];
    for (int i = 0; i < 4; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
    put({reinterpret_cast<const char*>(b), 4});
  }
  void putU64(uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
    put({reinterpret_cast<const char*>(b), 8});
  }
  void putString(std::string_view s) {
    putU32(static_cast<uint32_t>(s.size()));
    put(s);
  }
  void put(std::string_view bytes) {
    if (!ok_) return;
    EVP_DigestUpdate(digest_, bytes.data(), bytes.size());
    putUnhashed(bytes);
  }
  void putUnhashed(std::string_view bytes) {
    buffer_.append(bytes);
    if (buffer_.size() >= kBlockSize) flush();
  }
  bool flush() {
    size_t done = 0;
    while (ok_ && done < buffer_.size()) {
      const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok_ = false;
        error_ = errno;
        break;
      }
      done += static_cast<size_t>(n);
      written_ += static_cast<uint64_t>(n);
    }
    buffer_.clear();
    return ok_;
  }
  bool ok() const { return ok_; }
  int error() const { return error_; }
  uint64_t written() const { return written_; }

 private:
  int fd_;
  EVP_MD_CTX* digest_;
  std::string buffer_;
  bool ok_ = true;
  int error_ = 0;
  uint64_t written_ = 0;
};

// Reads the hashed region [0, limit) of a file in blocks, hashing what it hands out.
class HashingReader {
 public:
  HashingReader(int fd, uint64_t limit, EVP_MD_CTX* digest) : fd_(fd), limit_(limit), digest_(digest) {}

  // False when fewer than `n` bytes remain before the checksum (or on a read error).
  bool read(size_t n, std::string& out) {
    out.clear();
    if (n > limit_ - consumed_) return false;
    out.resize(n);
    size_t done = 0;
    while (done < n) {
      if (pos_ == buffer_.size() && !fill()) return false;
      const size_t take = std::min(n - done, buffer_.size() - pos_);
      std::memcpy(out.data() + done, buffer_.data() + pos_, take);
      pos_ += take;
      done += take;
    }
    consumed_ += n;
    EVP_DigestUpdate(digest_, out.data(), out.size());
    return true;
  }
  bool readU32(uint32_t& v) {
    if (!read(4, scratch_)) return false;
    v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(scratch_[i]);
    return true;
  }
  bool readU64(uint64_t& v) {
    if (!read(8, scratch_)) return false;
    v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(scratch_[i]);
    return true;
  }
  // The bytes after the hashed region (the stored checksum), unhashed.
  bool readTrailer(std::string& out) {
    out.clear();
    while (true) {
      out.append(buffer_.data() + pos_, buffer_.size() - pos_);
      pos_ = buffer_.size();
      if (!fill()) break;
    }
    return !io_error_;
  }
  uint64_t remaining() const { return limit_ - consumed_; }
  bool ioError() const { return io_error_; }

 private:
  bool fill() {
    buffer_.resize(kBlockSize);
    while (true) {
      const ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) io_error_ = true;
      buffer_.resize(n > 0 ? static_cast<size_t>(n) : 0);
      pos_ = 0;
      return n > 0;
    }
  }

  int fd_;
  uint64_t limit_;
  EVP_MD_CTX* digest_;
  std::string buffer_;
  size_t pos_ = 0;
  uint64_t consumed_ = 0;
  std::string scratch_;
  bool io_error_ = false;
};

StateReadResult refuse(StateFileProblem problem, std::string message) {
  StateReadResult out;
  out.problem = problem;
  out.message = std::move(message);
  return out;
}

void sanitizeInto(std::string& out, std::string_view part) {
  for (char c : part) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    out += safe ? c : '_';
  }
}

}  // namespace

std::string_view problemName(StateFileProblem problem) {
  switch (problem) {
    case StateFileProblem::None: return "none";
    case StateFileProblem::Missing: return "missing";
    case StateFileProblem::Io: return "io";
    case StateFileProblem::BadMagic: return "bad_magic";
    case StateFileProblem::WrongVersion: return "wrong_version";
    case StateFileProblem::WrongResource: return "wrong_resource";
    case StateFileProblem::Truncated: return "truncated";
    case StateFileProblem::Malformed: return "malformed";
    case StateFileProblem::Checksum: return "checksum";
  }
  return "unknown";
}

std::string stateFileName(const StateIdentity& identity) {
  std::string out;
  sanitizeInto(out, identity.resource);
  if (!identity.group.empty()) {
    out += '.';
    sanitizeInto(out, identity.group);
  }
  out += '.';
  sanitizeInto(out, identity.version);
  out += '.';
  // "_all" cannot be a namespace name (DNS labels have no underscore).
  if (identity.namespace_scope.empty()) {
    out += "_all";
  } else {
    sanitizeInto(out, identity.namespace_scope);
  }
  // A protobuf cache of the same collection keeps a file of its own.
  out += identity.transform.rfind("protobuf", 0) == 0 ? ".protobuf.state" : ".state";
  return out;
}

Result<uint64_t> writeStateFile(const std::string& path, const StateIdentity& identity, uint64_t resource_version,
                                uint64_t count, const StateObjectSource& source) {
  const std::string tmp = path + ".tmp";
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd.get() < 0) return fail(Reason::Internal, errnoText("cannot create", tmp));
  Digest digest = newSha256();
  if (!digest) return fail(Reason::Internal, "SHA-256 is not available");

  HashingWriter out(fd.get(), digest.get());
  out.put(kMagic);
  out.putU32(kStateFormatVersion);
  out.putString(identity.group);
  out.putString(identity.version);
  out.putString(identity.resource);
  out.putString(identity.namespace_scope);
  out.putString(identity.transform);
  out.putU64(resource_version);
  out.putU64(count);
  uint64_t emitted = 0;
  source([&](std::string_view json) {
    ++emitted;
    out.putString(json);
  });
  const auto sum = finish(digest.get());
  out.putUnhashed({reinterpret_cast<const char*>(sum.data()), sum.size()});
  const bool written = out.flush();
  if (!written || emitted != count || ::fsync(fd.get()) != 0) {
    const int error = written ? errno : out.error();
    ::unlink(tmp.c_str());
    if (emitted != count) {
      return fail(Reason::Internal, "state of " + std::to_string(emitted) + " objects, " + std::to_string(count) + " announced");
    }
    errno = error;
    return fail(Reason::Internal, errnoText("cannot write", tmp));
  }
  if (::close(fd.release()) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string message = errnoText("cannot write", path);
    ::unlink(tmp.c_str());
    return fail(Reason::Internal, message);
  }
  // The rename itself is durable only once the directory is synced.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
  return out.written();
}

StateReadResult readStateFile(const std::string& path, const StateIdentity& expected) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return refuse(StateFileProblem::Missing, "no state file " + path);
    return refuse(StateFileProblem::Io, errnoText("cannot open", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return refuse(StateFileProblem::Io, errnoText("cannot stat", path));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kMagic.size() + kDigestSize) return refuse(StateFileProblem::Truncated, "file of " + std::to_string(size) + " bytes");
  Digest digest = newSha256();
  if (!digest) return refuse(StateFileProblem::Io, "SHA-256 is not available");
  HashingReader in(fd.get(), size - kDigestSize, digest.get());
  auto truncated = [&](std::string_view where) {
    if (in.ioError()) return refuse(StateFileProblem::Io, errnoText("cannot read", path));
    return refuse(StateFileProblem::Truncated, "ends inside the " + std::string(where));
  };

  std::string bytes;
  if (!in.read(kMagic.size(), bytes)) return truncated("magic");
  if (bytes != kMagic) return refuse(StateFileProblem::BadMagic, "not a state file");
  uint32_t version = 0;
  if (!in.readU32(version)) return truncated("header");
  if (version != kStateFormatVersion) {
    return refuse(StateFileProblem::WrongVersion, "format version " + std::to_string(version) + ", expected " +
                                                      std::to_string(kStateFormatVersion));
  }
  StateReadResult result;
  LoadedState& state = result.state;
  for (std::string* field : {&state.identity.group, &state.identity.version, &state.identity.resource,
                             &state.identity.namespace_scope, &state.identity.transform}) {
    uint32_t length = 0;
    if (!in.readU32(length)) return truncated("header");
    if (length > kMaxNameLength) return refuse(StateFileProblem::Malformed, "header name of " + std::to_string(length) + " bytes");
    if (!in.read(length, *field)) return truncated("header");
  }
  if (state.identity != expected) {
    auto describe = [](const StateIdentity& identity) {
      return stateFileName(identity) + (identity.transform.empty() ? "" : " (" + identity.transform + ")");
    };
    return refuse(StateFileProblem::WrongResource,
                  "state of " + describe(state.identity) + ", expected " + describe(expected));
  }
  uint64_t count = 0;
  if (!in.readU64(state.resource_version) || !in.readU64(count)) return truncated("header");
  // Every object takes at least its 4-byte length: a larger count is corrupt, and must
  // not size an allocation.
  if (count > in.remaining() / 4) return refuse(StateFileProblem::Truncated, std::to_string(count) + " objects announced");
  state.objects.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t length = 0;
    if (!in.readU32(length)) return truncated("objects");
    std::string object;
    if (!in.read(length, object)) return truncated("objects");
    state.objects.push_back(std::move(object));
  }
  if (in.remaining() != 0) {
    return refuse(StateFileProblem::Malformed, std::to_string(in.remaining()) + " bytes after the last object");
  }
  std::string trailer;
  if (!in.readTrailer(trailer)) return refuse(StateFileProblem::Io, errnoText("cannot read", path));
  const auto sum = finish(digest.get());
  if (trailer.size() != kDigestSize || std::memcmp(trailer.data(), sum.data(), kDigestSize) != 0) {
    return refuse(StateFileProblem::Checksum, "checksum mismatch");
  }
  return result;
}

}  // namespace cache
