#pragma once
// The codec of packed objects (issue #20, #37): LZ4 blocks against a per-resource preset
// dictionary, for the current objects of a compressed store (Object::packed) and the
// history's old versions (PackedObject) alike.
//
// Why LZ4 and not the raw deflate packed objects used before (docs/design.md, "Packed
// objects' codec"): every LIST of a packed resource unpacks every object it lists, into a
// small per-request buffer, so unpacking speed is the price of a LIST. On 10,000 generated
// pods, each against the first pod as dictionary: deflate level 1 kept 487 bytes per pod
// and inflated at 832 MB/s; LZ4 492 bytes at 14 GB/s (dictionary_bench). zstd level 1 kept
// 308 bytes but unpacked at 2.4 GB/s, which made a LIST of 10,000 pods 2x a plain one
// instead of the 1.5x budget.
//
// Each call is independent (no state between objects) and thread-safe.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace cache {

// The preset dictionary of one resource: the bytes LZ4 may copy from when packing an
// object of it, as if they came before it (LZ4 looks at most 64 KiB back). Made once per
// resource from its first objects (PackDictionary::fromSamples) and shared by every object
// packed against it, which keeps it alive.
class PackDictionary {
 public:
  static constexpr size_t kMaxBytes = 64 * 1024;
  // Whole objects are taken until the dictionary holds this much, all LZ4 can look back
  // on (docs/design.md, "Packed objects' dictionary", measured per resource by
  // dictionary_bench): bytes kept per object against one object / 16 KiB / 64 KiB of
  // them were 492 / 390 / 394 for 5 KB generated pods, 311 / 311 / 265 for 32 KB pods
  // with managedFields and 150 / 116 / 106 for 0.8 KB ConfigMaps. Packing copies the
  // loaded state, so a larger dictionary costs no packing time (2.2, 7.2 and 1.2 GB/s
  // whatever its size), and unpacking does not depend on it either.
  static constexpr size_t kSampleBytes = kMaxBytes;

  // The last kMaxBytes of `sample`.
  explicit PackDictionary(std::string_view sample);
  ~PackDictionary();
  PackDictionary(const PackDictionary&) = delete;
  PackDictionary& operator=(const PackDictionary&) = delete;
  // Whole samples appended in order until they hold at least `min_bytes`; the last
  // kMaxBytes of them.
  static std::shared_ptr<const PackDictionary> fromSamples(std::span<const std::string_view> samples,
                                                           size_t min_bytes = kSampleBytes);
  std::string_view bytes() const { return bytes_; }
  // LZ4's state with the dictionary loaded (an LZ4_stream_t): packing copies it (16 KiB)
  // instead of hashing the dictionary again for every object, which made packing a small
  // ConfigMap 6x slower than the copy does (dictionary_bench).
  const void* loadedState() const { return loaded_; }

 private:
  std::string bytes_;
  void* loaded_ = nullptr;  // LZ4_stream_t*, loaded once from bytes_, never changed
};
using PackDictionaryConstSharedPtr = std::shared_ptr<const PackDictionary>;

// `in` packed against `dictionary` (may be null): a view of a per-thread buffer, valid
// until the calling thread packs again.
std::string_view packBytes(std::string_view in, const PackDictionary* dictionary);
// Unpacks `packed` (made by packBytes with the same dictionary) into exactly `out_size`
// bytes at `out`. We made the input: anything else is memory corruption, and aborts.
void unpackBytes(std::string_view packed, const PackDictionary* dictionary, char* out, size_t out_size);
// Unpacks only the first `prefix_size` bytes (at most `plain_size`, the whole object's)
// into out[0, prefix_size): LZ4 stops decoding there, so reading an object's uid or
// metadata costs what lies before them, not the whole object.
void unpackPrefix(std::string_view packed, const PackDictionary* dictionary, char* out, size_t prefix_size,
                  size_t plain_size);

}  // namespace cache
