#pragma once
// cache::Object: one Kubernetes object as upstream sent it. Immutable after
// construction and shared across threads as ObjectConstSharedPtr.
//
// - bytes() is the raw bytes exactly as received, JSON or (encoding() Protobuf) the bare
//   message of the object's type, the envelope's raw (after the optional ingestion
//   transform that drops metadata.managedFields by byte splicing), in one allocation of
//   exactly their size (no simdjson padding: nothing re-parses stored objects in place,
//   and 64 bytes per object is 6 MB at 100,000 objects). They are never copied on read.
// - meta() holds what the store, indexes and selectors need, extracted once by
//   ObjectMetaParser in the same pass that located the bytes.
// - Views returned by accessors live as long as the caller holds the ObjectConstSharedPtr.
// - A packed object (--store-encoding compressed, issue #20; Object::packed) keeps its
//   bytes packed for its whole life (issue #37): a reader unpacks them into a buffer of its
//   own (bytes(buffer), copyBytes), never into the instance the store and every snapshot
//   share, so a LIST costs its buffer and not a copy of what it lists. Its metadata, key,
//   layout and byteSize() never need unpacking.

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "cache/encoding.h"
#include "cache/selectors/labels.h"

namespace cache {

class PackDictionary;

class Object;
using ObjectConstSharedPtr = std::shared_ptr<const Object>;

// Everything the store needs from metadata (plus selectable field values).
struct ObjectMeta {
  std::string namespace_name;  // empty for cluster-scoped objects
  std::string name;
  uint64_t resource_version = 0;  // metadata.resourceVersion, parsed (R1)
  int64_t generation = 0;
  bool has_deletion_timestamp = false;
  Labels labels;
  // FieldSpec field values keyed by the selector spelling. Fields whose value is "" (absent,
  // null, empty, or not a scalar) have no entry, to save memory: read them with
  // lookup(fields, name).value_or(""), which is how a field selector compares them.
  Fields fields;
  // Values of the store's custom JSON-path indexes, keyed by index name; "" omitted likewise.
  Fields index_values;
};

// [begin, end) byte offsets into Object::bytes().
struct ByteRange {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool empty() const { return begin == end; }
  uint32_t size() const { return end - begin; }
};

// Where things are inside the bytes, so writers can splice instead of re-serializing.
// Of a protobuf object: no type meta cuts (the message has none), `metadata` is the
// ObjectMeta message (field 1's value, without its tag and length), the others the values
// of their string fields.
struct ObjectLayout {
  // Deleting these ranges (sorted, disjoint, possibly empty) yields the object without
  // its top-level kind/apiVersion members, as built-in list items are written (L1).
  std::array<ByteRange, 2> type_meta_cuts;
  // The characters between the quotes of metadata.resourceVersion.
  ByteRange resource_version_value;
  // The metadata object, braces included: served as is in PartialObjectMetadata (N4)
  // without parsing the object again.
  ByteRange metadata;
  // The characters between the quotes of metadata.uid, or empty when it is absent or
  // written with escape sequences (never so from a real apiserver: uids are UUIDs). A
  // range instead of a copy saves a string and its allocation per object.
  ByteRange uid_value;
};

class Object : public std::enable_shared_from_this<Object> {
  struct PassKey {};

 public:
  // One byte edit applied while copying: replace source[range) with `text`.
  struct Edit {
    ByteRange range;
    std::string_view text;
  };
  // Copies `source` with `edits` (sorted, disjoint) applied into a new padded buffer.
  // `layout` is relative to `source`, must not point inside an edited range, and is
  // moved along with the bytes.
  static ObjectConstSharedPtr create(ObjectMeta&& meta, std::string_view source, std::span<const Edit> edits,
                                     ObjectLayout layout, Encoding encoding = Encoding::Json);
  // The same, with the shared_ptr's control block allocated apart from the Object: a
  // weak_ptr that outlives the object then pins 32 bytes instead of the whole struct
  // (PackedObject remembers the object it unpacked last this way).
  static ObjectConstSharedPtr createWeaklyReferenced(ObjectMeta&& meta, std::string_view source, ObjectLayout layout,
                                                     Encoding encoding);

  Object(PassKey, ObjectMeta&& meta, size_t size);
  Object(PassKey, const Object& from, std::string_view packed, std::shared_ptr<const PackDictionary> dictionary);
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  ~Object() { delete[] data_; }

  // A packed copy of `plain` (issue #20): the same metadata, key and layout, its bytes
  // packed against `dictionary` (cache/packing/pack_codec.h). `plain` must not be packed.
  static ObjectConstSharedPtr packed(const Object& plain, std::shared_ptr<const PackDictionary> dictionary);

  // The bytes as received: a plain object's own (the view lives as long as the object),
  // a packed object's unpacked into `buffer`, whose contents they replace (the view lives
  // until the buffer changes). Readers that may meet packed objects read this way.
  std::string_view bytes(std::string& buffer) const;
  // Writes the bytes (a packed object's unpacked) to out[0, byteSize()).
  void copyBytes(char* out) const;
  // Appends the bytes (a packed object's unpacked in place) to `out`.
  void appendBytes(std::string& out) const;
  // A plain object's own bytes. Only where the object cannot be packed (just parsed, or
  // chosen by !isPacked()); aborts on a packed one, which would be a reader that forgot
  // to bring a buffer.
  std::string_view plainBytes() const;
  // The bytes' size, without unpacking a packed object.
  size_t byteSize() const { return size_; }
  bool isPacked() const { return packed_size_ != 0; }
  // The packed bytes of a packed object; 0 for a plain one.
  size_t packedBytes() const { return packed_size_; }
  Encoding encoding() const { return encoding_; }
  const ObjectMeta& meta() const { return meta_; }
  const ObjectLayout& layout() const { return layout_; }
  // "namespace/name", or "name" for cluster-scoped objects (client-go MetaNamespaceKeyFunc).
  const std::string& key() const { return key_; }
  uint64_t resourceVersion() const { return meta_.resource_version; }
  // metadata.uid as written (see ObjectLayout::uid_value); `buffer` as for bytes().
  // A packed object unpacks only the bytes up to the uid's end (a shard selector's
  // filter asks it of every object it scans).
  std::string_view uid(std::string& buffer) const {
    return prefix(buffer, layout_.uid_value.end).substr(layout_.uid_value.begin, layout_.uid_value.size());
  }
  // The metadata as stored (ObjectLayout::metadata): the JSON object, or the protobuf
  // ObjectMeta message; "" when the layout has none. `buffer` as for bytes().
  std::string_view metadataBytes(std::string& buffer) const {
    return prefix(buffer, layout_.metadata.end).substr(layout_.metadata.begin, layout_.metadata.size());
  }

  // Appends the bytes without the top-level kind/apiVersion members (L1 list items).
  void appendWithoutTypeMeta(std::string& out) const;
  // The same object with metadata.resourceVersion set to `rv`, by splicing the digits
  // (in protobuf also the lengths around them). Used for DELETED events, which carry the
  // deletion RV (W3).
  ObjectConstSharedPtr withResourceVersion(uint64_t rv) const;

  // Heap bytes this object costs besides its bytes: the struct, padding, key and metadata.
  size_t overheadBytes() const;

 private:
  static std::shared_ptr<Object> build(ObjectMeta&& meta, std::string_view source, std::span<const Edit> edits,
                                       ObjectLayout layout, Encoding encoding, bool separate_control_block = false);
  ObjectConstSharedPtr protobufWithResourceVersion(uint64_t rv) const;
  // The bytes [0, end) (end <= byteSize()), as bytes(buffer) hands them out.
  std::string_view prefix(std::string& buffer, size_t end) const;

  ObjectMeta meta_;
  ObjectLayout layout_;
  std::string key_;
  uint32_t size_;
  // The packed bytes' size; 0 for a plain object (nothing packs to 0 bytes).
  uint32_t packed_size_ = 0;
  Encoding encoding_ = Encoding::Json;
  // new[]: size_ bytes as received, or packed_size_ packed bytes. Never changed.
  char* data_ = nullptr;
  std::shared_ptr<const PackDictionary> dictionary_;  // packed objects only
};

std::string makeKey(std::string_view namespace_name, std::string_view name);

}  // namespace cache
