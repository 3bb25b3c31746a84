#include "cache/packing/pack_codec.h"

#include <lz4.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace cache {

namespace {

// Acceleration 1: LZ4's default and its best ratio among the fast modes. Packing runs off
// the ingestion path (the cache's background thread), once per object version.
constexpr int kAcceleration = 1;

struct StreamState {
  LZ4_stream_t* stream = LZ4_createStream();
  StreamState() {
    if (!stream) throw std::bad_alloc();
  }
  ~StreamState() { LZ4_freeStream(stream); }
};

}  // namespace

PackDictionary::PackDictionary(std::string_view sample)
    : bytes_(sample.substr(sample.size() > kMaxBytes ? sample.size() - kMaxBytes : 0)) {
  LZ4_stream_t* loaded = LZ4_createStream();
  if (!loaded) throw std::bad_alloc();
  // The state points at bytes_, which neither moves nor changes from here on.
  LZ4_loadDict(loaded, bytes_.data(), static_cast<int>(bytes_.size()));
  loaded_ = loaded;
}

PackDictionary::~PackDictionary() { LZ4_freeStream(static_cast<LZ4_stream_t*>(loaded_)); }

PackDictionaryConstSharedPtr PackDictionary::fromSamples(std::span<const std::string_view> samples, size_t min_bytes) {
  std::string joined;
  for (std::string_view sample : samples) {
    if (joined.size() >= min_bytes) break;
    joined.append(sample);
  }
  return std::make_shared<const PackDictionary>(joined);
}

std::string_view packBytes(std::string_view in, const PackDictionary* dictionary) {
  thread_local StreamState state;
  thread_local std::string out;
  // One state per thread, set per object: a copy of the dictionary's loaded state (LZ4's
  // documented alternative to loading it again), or reset when there is none.
  if (dictionary && !dictionary->bytes().empty()) {
    std::memcpy(state.stream, dictionary->loadedState(), sizeof(LZ4_stream_t));
  } else {
    LZ4_resetStream_fast(state.stream);
  }
  out.resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(in.size()))));
  const int n = LZ4_compress_fast_continue(state.stream, in.data(), out.data(), static_cast<int>(in.size()),
                                           static_cast<int>(out.size()), kAcceleration);
  if (n <= 0) std::abort();  // the bound guarantees room
  return std::string_view(out.data(), static_cast<size_t>(n));
}

void unpackBytes(std::string_view packed, const PackDictionary* dictionary, char* out, size_t out_size) {
  const std::string_view dict = dictionary ? dictionary->bytes() : std::string_view{};
  const int n = LZ4_decompress_safe_usingDict(packed.data(), out, static_cast<int>(packed.size()),
                                              static_cast<int>(out_size), dict.data(), static_cast<int>(dict.size()));
  if (n < 0 || static_cast<size_t>(n) != out_size) std::abort();
}

void unpackPrefix(std::string_view packed, const PackDictionary* dictionary, char* out, size_t prefix_size,
                  size_t plain_size) {
  if (prefix_size > plain_size) std::abort();
  const std::string_view dict = dictionary ? dictionary->bytes() : std::string_view{};
  // `packed` is exactly the block, so any target up to the plain size is safe (lz4.h).
  const int n = LZ4_decompress_safe_partial_usingDict(packed.data(), out, static_cast<int>(packed.size()),
                                                      static_cast<int>(prefix_size), static_cast<int>(prefix_size),
                                                      dict.data(), static_cast<int>(dict.size()));
  if (n < 0 || static_cast<size_t>(n) != prefix_size) std::abort();
}

}  // namespace cache
