#pragma once
// PackedObject: an old version of an object as the watch history keeps it once a newer
// version superseded it (issue #20): its bytes packed against the resource's preset
// dictionary (pack_codec.h). Its key and RV stay plain (the history orders and undoes by
// them); the rest of its metadata (labels, selectable fields, index values) is packed with
// the bytes: plain, those cost a realistic pod more than its packed JSON does.
//
// Why per object with a dictionary rather than blocks of many objects: a watch resume or
// an Exact read wants a few scattered old versions, and one object unpacks in ~1 us
// (cache_bench pack) without touching its neighbours. A dictionary (an earlier object of the same resource)
// lets the codec find the field names and shapes that a lone 5 KB object cannot compress
// by itself (docs/design.md, "Store layout" and "Packed objects' dictionary").
//
// Immutable after pack(), shared across threads as PackedObjectConstSharedPtr.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "cache/object.h"
#include "cache/packing/pack_codec.h"

namespace cache {

class PackedObject;
using PackedObjectConstSharedPtr = std::shared_ptr<const PackedObject>;

class PackedObject {
  struct PassKey {};

 public:
  // Packs `object`'s bytes with its metadata (this runs for every superseded version, off
  // the ingestion path but not free). `object` may itself be packed (a current object of
  // a compressed store, superseded): it is unpacked first.
  static PackedObjectConstSharedPtr pack(const Object& object, PackDictionaryConstSharedPtr dictionary);

  PackedObject(PassKey, const Object& object, std::string_view packed, uint32_t meta_size,
               PackDictionaryConstSharedPtr dictionary);

  // An Object equal to the packed one: same bytes, metadata and layout. While a reader
  // still holds the one unpacked last, others get that one: a resume meets most versions
  // twice (one event's object is the next one's prev_object), and watchers resuming
  // together share their copies instead of inflating and holding one each.
  ObjectConstSharedPtr unpack() const;

  const std::string& key() const { return key_; }
  uint64_t resourceVersion() const { return resource_version_; }
  size_t plainSize() const { return plain_size_; }
  // Heap bytes this packed version costs: the struct, its key and the packed bytes.
  size_t heapBytes() const;

 private:
  std::string key_;
  uint64_t resource_version_;
  int64_t generation_;
  ObjectLayout layout_;
  uint32_t plain_size_;  // the object's bytes
  uint32_t meta_size_;   // the metadata written after them before deflating
  uint32_t packed_size_;
  Encoding encoding_;
  bool has_deletion_timestamp_;
  std::unique_ptr<char[]> packed_;
  PackDictionaryConstSharedPtr dictionary_;
  // Guarded by a lock stripe (packed_object.cpp). Once the object is gone this pins only
  // its control block (Object::createWeaklyReferenced): 32 bytes.
  mutable std::weak_ptr<const Object> unpacked_;

  ObjectConstSharedPtr inflateObject() const;
};

}  // namespace cache
