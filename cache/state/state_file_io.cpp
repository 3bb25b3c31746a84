#include "cache/state/state_file_io.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cache::state_io {
namespace {

// Writes go out in blocks of this size: few syscalls, little memory.
constexpr size_t kBlockSize = 1 << 20;

class Sha256 final : public Seal {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) {}
  ~Sha256() override { EVP_MD_CTX_free(ctx_); }
  bool init() { return ctx_ && EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) == 1; }
  void update(const void* data, size_t size) override { EVP_DigestUpdate(ctx_, data, size); }
  SealBytes finish() override {
    SealBytes out{};
    unsigned int size = 0;
    EVP_DigestFinal_ex(ctx_, out.data(), &size);
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

class HmacSha256 final : public Seal {
 public:
  HmacSha256() : mac_(EVP_MAC_fetch(nullptr, "HMAC", nullptr)), ctx_(mac_ ? EVP_MAC_CTX_new(mac_) : nullptr) {}
  ~HmacSha256() override {
    EVP_MAC_CTX_free(ctx_);
    EVP_MAC_free(mac_);
  }
  bool init(std::string_view key) {
    if (!ctx_) return false;
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_construct_end()};
    return EVP_MAC_init(ctx_, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params) == 1;
  }
  void update(const void* data, size_t size) override {
    EVP_MAC_update(ctx_, static_cast<const unsigned char*>(data), size);
  }
  SealBytes finish() override {
    SealBytes out{};
    size_t size = 0;
    EVP_MAC_final(ctx_, out.data(), &size, out.size());
    return out;
  }

 private:
  EVP_MAC* mac_;
  EVP_MAC_CTX* ctx_;
};

}  // namespace

std::unique_ptr<Seal> Seal::make(std::string_view key) {
  if (key.empty()) {
    auto sha = std::make_unique<Sha256>();
    if (!sha->init()) return nullptr;
    return sha;
  }
  auto hmac = std::make_unique<HmacSha256>();
  if (!hmac->init(key)) return nullptr;
  return hmac;
}

bool sameSeal(std::string_view stored, const SealBytes& computed) {
  return stored.size() == computed.size() && CRYPTO_memcmp(stored.data(), computed.data(), computed.size()) == 0;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

SealingWriter::SealingWriter(int fd, Seal& seal) : fd_(fd), seal_(seal) { buffer_.reserve(kBlockSize); }

void SealingWriter::putU32(uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  put({b, 4});
}

void SealingWriter::putU64(uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  put({b, 8});
}

void SealingWriter::putString(std::string_view s) {
  putU32(static_cast<uint32_t>(s.size()));
  put(s);
}

void SealingWriter::put(std::string_view bytes) {
  if (!ok_) return;
  seal_.update(bytes.data(), bytes.size());
  putUnsealed(bytes);
}

void SealingWriter::putUnsealed(std::string_view bytes) {
  buffer_.append(bytes);
  if (buffer_.size() >= kBlockSize) flush();
}

bool SealingWriter::flush() {
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

bool SealingReader::read(size_t n, std::string& out) {
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
  seal_.update(out.data(), out.size());
  return true;
}

bool SealingReader::readU32(uint32_t& v) {
  if (!read(4, scratch_)) return false;
  v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(scratch_[i]);
  return true;
}

bool SealingReader::readU64(uint64_t& v) {
  if (!read(8, scratch_)) return false;
  v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(scratch_[i]);
  return true;
}

bool SealingReader::readTrailer(std::string& out) {
  out.clear();
  while (true) {
    out.append(buffer_.data() + pos_, buffer_.size() - pos_);
    pos_ = buffer_.size();
    // A trailer longer than a seal is wrong whatever follows: stop reading.
    if (out.size() > kSealSize || !fill()) break;
  }
  return !io_error_;
}

bool SealingReader::fill() {
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

}  // namespace cache::state_io
