#include "cache/packing/packed_object.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace cache {

namespace {

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

}  // namespace

PackedObject::PackedObject(PassKey, const Object& object, std::string_view packed, uint32_t meta_size,
                           PackDictionaryConstSharedPtr dictionary)
    : key_(object.key()),
      resource_version_(object.resourceVersion()),
      generation_(object.meta().generation),
      layout_(object.layout()),
      plain_size_(static_cast<uint32_t>(object.byteSize())),
      meta_size_(meta_size),
      packed_size_(static_cast<uint32_t>(packed.size())),
      encoding_(object.encoding()),
      has_deletion_timestamp_(object.meta().has_deletion_timestamp),
      packed_(std::make_unique_for_overwrite<char[]>(packed.size())),
      dictionary_(std::move(dictionary)) {
  std::memcpy(packed_.get(), packed.data(), packed.size());
}

size_t PackedObject::heapBytes() const {
  constexpr size_t kControlBlock = 16;  // make_shared's, next to the object
  return sizeof(PackedObject) + kControlBlock + (key_.capacity() > 15 ? key_.capacity() + 1 : 0) + packed_size_;
}

PackedObjectConstSharedPtr PackedObject::pack(const Object& object, PackDictionaryConstSharedPtr dictionary) {
  thread_local std::string plain;
  plain.clear();
  object.appendBytes(plain);
  appendPairs(plain, object.meta().labels);
  appendPairs(plain, object.meta().fields);
  appendPairs(plain, object.meta().index_values);
  const auto meta_size = static_cast<uint32_t>(plain.size() - object.byteSize());

  const std::string_view packed = packBytes(plain, dictionary.get());
  return std::make_shared<const PackedObject>(PassKey{}, object, packed, meta_size, std::move(dictionary));
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
  unpackBytes({packed_.get(), packed_size_}, dictionary_.get(), plain.data(), total);

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
