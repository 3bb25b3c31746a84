#include "cache/packed_object.h"

#include <zlib.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace cache {

namespace {

// Level 1: packing runs for every superseded version, and the dictionary does most of
// the work. Level 6 kept a realistic pod version in 424 bytes instead of 566, for ~2.7x
// the deflate CPU (docs/design.md).
constexpr int kLevel = 1;

// One deflate and one inflate state per thread, reset per object: deflateInit2 costs a
// 256 KiB allocation, more than packing a pod.
struct Deflater {
  z_stream z{};
  Deflater() {
    if (deflateInit2(&z, kLevel, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::bad_alloc();
  }
  ~Deflater() { deflateEnd(&z); }
};

struct Inflater {
  z_stream z{};
  Inflater() {
    if (inflateInit2(&z, -15) != Z_OK) throw std::bad_alloc();
  }
  ~Inflater() { inflateEnd(&z); }
};

Bytef* bytef(const char* p) { return reinterpret_cast<Bytef*>(const_cast<char*>(p)); }

// Guards PackedObject::unpacked_: a mutex per version would cost 40 bytes each, and
// readers only hold one for a weak_ptr copy.
std::mutex& unpackedStripe(const void* p) {
  static std::array<std::mutex, 64> stripes;
  return stripes[(reinterpret_cast<uintptr_t>(p) >> 6) % stripes.size()];
}

// The metadata sets after the object's bytes: per set a count, then length-prefixed
// keys and values (native-endian uint32: the bytes never leave this process).
void appendU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

void appendPairs(std::string& out, const StringPairs& pairs) {
  appendU32(out, static_cast<uint32_t>(pairs.size()));
  for (const auto& [key, value] : pairs) {
    appendU32(out, static_cast<uint32_t>(key.size()));
    out.append(key);
    appendU32(out, static_cast<uint32_t>(value.size()));
    out.append(value);
  }
}

struct MetaReader {
  std::string_view in;
  uint32_t u32() {
    uint32_t v;
    if (in.size() < sizeof v) std::abort();
    std::memcpy(&v, in.data(), sizeof v);
    in.remove_prefix(sizeof v);
    return v;
  }
  std::string_view bytes() {
    const uint32_t n = u32();
    if (in.size() < n) std::abort();
    std::string_view out = in.substr(0, n);
    in.remove_prefix(n);
    return out;
  }
  StringPairs pairs() {
    std::vector<StringPairs::value_type> out(u32());
    for (auto& [key, value] : out) {
      key = bytes();
      value = bytes();
    }
    return StringPairs(std::span<const StringPairs::value_type>(out));
  }
};

// Raw deflate of `in` against `dictionary` (may be null) into `out`, reused per thread.
std::string_view deflateWith(std::string_view in, const PackDictionary* dictionary) {
  thread_local Deflater deflater;
  thread_local std::string out;
  z_stream& z = deflater.z;
  deflateReset(&z);
  if (dictionary && !dictionary->bytes().empty()) {
    deflateSetDictionary(&z, bytef(dictionary->bytes().data()), static_cast<uInt>(dictionary->bytes().size()));
  }
  out.resize(deflateBound(&z, in.size()));
  z.next_in = bytef(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = bytef(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  // deflateBound guarantees one call finishes.
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  return std::string_view(out.data(), out.size() - z.avail_out);
}

// Inflates exactly `out_size` bytes into `out`. We made the input: anything but a whole
// stream of exactly that size is memory corruption.
void inflateWith(const char* in, size_t in_size, const PackDictionary* dictionary, char* out, size_t out_size) {
  thread_local Inflater inflater;
  z_stream& z = inflater.z;
  inflateReset(&z);
  if (dictionary && !dictionary->bytes().empty()) {
    inflateSetDictionary(&z, bytef(dictionary->bytes().data()), static_cast<uInt>(dictionary->bytes().size()));
  }
  z.next_in = bytef(in);
  z.avail_in = static_cast<uInt>(in_size);
  z.next_out = reinterpret_cast<Bytef*>(out);
  z.avail_out = static_cast<uInt>(out_size);
  if (inflate(&z, Z_FINISH) != Z_STREAM_END || z.avail_out != 0) std::abort();
}

}  // namespace

ObjectConstSharedPtr Object::packed(const Object& plain, std::shared_ptr<const PackDictionary> dictionary) {
  const std::string_view deflated = deflateWith(plain.bytes(), dictionary.get());
  auto bytes = std::make_shared<DeflatedBytes>();
  bytes->data = std::make_unique_for_overwrite<char[]>(deflated.size());
  std::memcpy(bytes->data.get(), deflated.data(), deflated.size());
  bytes->size = static_cast<uint32_t>(deflated.size());
  bytes->dictionary = std::move(dictionary);
  return std::make_shared<const Object>(PassKey{}, plain, std::move(bytes));
}

const char* Object::inflate() const {
  char* plain = new char[size_];
  inflateWith(deflated_->data.get(), deflated_->size, deflated_->dictionary.get(), plain, size_);
  char* expected = nullptr;
  if (plain_.compare_exchange_strong(expected, plain, std::memory_order_acq_rel, std::memory_order_acquire)) {
    return plain;
  }
  delete[] plain;  // another reader inflated it first
  return expected;
}

PackDictionary::PackDictionary(std::string_view sample)
    : bytes_(sample.substr(sample.size() > kMaxBytes ? sample.size() - kMaxBytes : 0)) {}

PackedObject::PackedObject(PassKey, const Object& object, std::string_view deflated, uint32_t meta_size,
                           PackDictionaryConstSharedPtr dictionary)
    : key_(object.key()),
      resource_version_(object.resourceVersion()),
      generation_(object.meta().generation),
      layout_(object.layout()),
      plain_size_(static_cast<uint32_t>(object.byteSize())),
      meta_size_(meta_size),
      deflated_size_(static_cast<uint32_t>(deflated.size())),
      encoding_(object.encoding()),
      has_deletion_timestamp_(object.meta().has_deletion_timestamp),
      deflated_(std::make_unique_for_overwrite<char[]>(deflated.size())),
      dictionary_(std::move(dictionary)) {
  std::memcpy(deflated_.get(), deflated.data(), deflated.size());
}

size_t PackedObject::heapBytes() const {
  constexpr size_t kControlBlock = 16;  // make_shared's, next to the object
  return sizeof(PackedObject) + kControlBlock + (key_.capacity() > 15 ? key_.capacity() + 1 : 0) + deflated_size_;
}

PackedObjectConstSharedPtr PackedObject::pack(const Object& object, PackDictionaryConstSharedPtr dictionary) {
  thread_local std::string plain;
  plain.assign(object.bytes());
  appendPairs(plain, object.meta().labels);
  appendPairs(plain, object.meta().fields);
  appendPairs(plain, object.meta().index_values);
  const auto meta_size = static_cast<uint32_t>(plain.size() - object.byteSize());

  const std::string_view deflated = deflateWith(plain, dictionary.get());
  return std::make_shared<const PackedObject>(PassKey{}, object, deflated, meta_size, std::move(dictionary));
}

ObjectConstSharedPtr PackedObject::unpack() const {
  std::mutex& stripe = unpackedStripe(this);
  {
    std::lock_guard lock(stripe);
    if (auto object = unpacked_.lock()) return object;
  }
  ObjectConstSharedPtr object = inflateObject();
  std::lock_guard lock(stripe);
  if (auto raced = unpacked_.lock()) return raced;  // another reader inflated it meanwhile
  unpacked_ = object;
  return object;
}

ObjectConstSharedPtr PackedObject::inflateObject() const {
  thread_local std::string plain;
  const uint32_t total = plain_size_ + meta_size_;
  plain.resize(total);
  inflateWith(deflated_.get(), deflated_size_, dictionary_.get(), plain.data(), total);

  ObjectMeta meta;
  const size_t slash = key_.find('/');  // neither namespaces nor names contain one
  if (slash != std::string::npos) {
    meta.namespace_name = key_.substr(0, slash);
    meta.name = key_.substr(slash + 1);
  } else {
    meta.name = key_;
  }
  meta.resource_version = resource_version_;
  meta.generation = generation_;
  meta.has_deletion_timestamp = has_deletion_timestamp_;
  MetaReader reader{std::string_view(plain).substr(plain_size_)};
  meta.labels = reader.pairs();
  meta.fields = reader.pairs();
  meta.index_values = reader.pairs();
  return Object::createWeaklyReferenced(std::move(meta), std::string_view(plain).substr(0, plain_size_), layout_,
                                        encoding_);
}

}  // namespace cache
