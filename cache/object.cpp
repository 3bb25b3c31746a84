#include "cache/object.h"

#include <array>
#include <cstdlib>
#include <cstring>

#include "cache/packing/pack_codec.h"


namespace cache {

namespace {

// Where `offset` lands once `edits` are applied. Offsets at or after an edited range
// move by its length change; offsets inside one are not meaningful (callers never ask).
uint32_t mapOffset(uint32_t offset, std::span<const Object::Edit> edits) {
  int64_t delta = 0;
  for (const auto& edit : edits) {
    if (offset < edit.range.end || (edit.range.empty() && offset < edit.range.begin)) break;
    delta += static_cast<int64_t>(edit.text.size()) - static_cast<int64_t>(edit.range.size());
  }
  return static_cast<uint32_t>(offset + delta);
}

// A layout range equal to an edited range (an insertion point included) becomes the
// edit's output; {0,0} means "absent" and stays so.
ByteRange mapRange(ByteRange r, std::span<const Object::Edit> edits, std::span<const uint32_t> output_begins) {
  if (r.begin == 0 && r.end == 0) return r;
  for (size_t i = 0; i < edits.size(); ++i) {
    if (edits[i].range.begin == r.begin && edits[i].range.end == r.end) {
      return {output_begins[i], static_cast<uint32_t>(output_begins[i] + edits[i].text.size())};
    }
  }
  return {mapOffset(r.begin, edits), mapOffset(r.end, edits)};
}

size_t heapBytes(const std::string& s) {
  // libstdc++ keeps up to 15 characters inline.
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

size_t heapBytes(const StringPairs& set) { return set.heapBytes(); }

}  // namespace

std::string makeKey(std::string_view namespace_name, std::string_view name) {
  std::string key;
  if (namespace_name.empty()) {
    key.assign(name);
  } else {
    key.reserve(namespace_name.size() + 1 + name.size());
    key.append(namespace_name).append(1, '/').append(name);
  }
  return key;
}

Object::Object(PassKey, ObjectMeta&& meta, size_t size)
    : meta_(std::move(meta)),
      key_(makeKey(meta_.namespace_name, meta_.name)),
      size_(static_cast<uint32_t>(size)),
      data_(new char[size]) {}

Object::Object(PassKey, const Object& from, std::string_view packed, std::shared_ptr<const PackDictionary> dictionary)
    : meta_(from.meta_),
      layout_(from.layout_),
      key_(from.key_),
      size_(from.size_),
      packed_size_(static_cast<uint32_t>(packed.size())),
      encoding_(from.encoding_),
      data_(new char[packed.size()]),
      dictionary_(std::move(dictionary)) {
  std::memcpy(data_, packed.data(), packed.size());
}

ObjectConstSharedPtr Object::packed(const Object& plain, std::shared_ptr<const PackDictionary> dictionary) {
  const std::string_view packed = packBytes(plain.plainBytes(), dictionary.get());
  return std::make_shared<const Object>(PassKey{}, plain, packed, std::move(dictionary));
}

std::string_view Object::plainBytes() const {
  if (isPacked()) std::abort();
  return {data_, size_};
}

void Object::copyBytes(char* out) const {
  if (isPacked()) {
    unpackBytes({data_, packed_size_}, dictionary_.get(), out, size_);
  } else {
    std::memcpy(out, data_, size_);
  }
}

std::string_view Object::bytes(std::string& buffer) const {
  if (!isPacked()) return {data_, size_};
  buffer.resize(size_);
  copyBytes(buffer.data());
  return buffer;
}

std::string_view Object::prefix(std::string& buffer, size_t end) const {
  if (!isPacked()) return {data_, end};
  if (end == 0) return {};
  buffer.resize(end);
  unpackPrefix({data_, packed_size_}, dictionary_.get(), buffer.data(), end, size_);
  return buffer;
}

void Object::appendBytes(std::string& out) const {
  const size_t at = out.size();
  out.resize(at + size_);
  copyBytes(out.data() + at);
}

ObjectConstSharedPtr Object::create(ObjectMeta&& meta, std::string_view source, std::span<const Edit> edits,
                                    ObjectLayout layout, Encoding encoding) {
  return build(std::move(meta), source, edits, layout, encoding);
}

ObjectConstSharedPtr Object::createWeaklyReferenced(ObjectMeta&& meta, std::string_view source, ObjectLayout layout,
                                                    Encoding encoding) {
  return build(std::move(meta), source, {}, layout, encoding, true);
}

std::shared_ptr<Object> Object::build(ObjectMeta&& meta, std::string_view source, std::span<const Edit> edits,
                                      ObjectLayout layout, Encoding encoding, bool separate_control_block) {
  size_t size = source.size();
  for (const auto& edit : edits) size = size - edit.range.size() + edit.text.size();
  auto object = separate_control_block ? std::shared_ptr<Object>(new Object(PassKey{}, std::move(meta), size))
                                       : std::make_shared<Object>(PassKey{}, std::move(meta), size);
  char* const base = object->data_;
  char* out = base;
  // Callers splice at most kMaxEdits ranges (type meta, managedFields, the RV digits).
  constexpr size_t kMaxEdits = 4;
  if (edits.size() > kMaxEdits) std::abort();
  std::array<uint32_t, kMaxEdits> output_begins{};
  size_t pos = 0;
  for (size_t i = 0; i < edits.size(); ++i) {
    const Edit& edit = edits[i];
    std::memcpy(out, source.data() + pos, edit.range.begin - pos);
    out += edit.range.begin - pos;
    output_begins[i] = static_cast<uint32_t>(out - base);
    // An empty replacement (a cut) may have a null data(); memcpy must not see it.
    if (!edit.text.empty()) std::memcpy(out, edit.text.data(), edit.text.size());
    out += edit.text.size();
    pos = edit.range.end;
  }
  std::memcpy(out, source.data() + pos, source.size() - pos);
  const std::span<const uint32_t> begins(output_begins.data(), edits.size());
  for (auto& r : layout.type_meta_cuts) r = mapRange(r, edits, begins);
  layout.resource_version_value = mapRange(layout.resource_version_value, edits, begins);
  layout.uid_value = mapRange(layout.uid_value, edits, begins);
  layout.metadata = mapRange(layout.metadata, edits, begins);
  object->layout_ = layout;
  object->encoding_ = encoding;
  return object;
}

void Object::appendWithoutTypeMeta(std::string& out) const {
  // A packed object is unpacked into a per-thread buffer: no view of it leaves this call.
  thread_local std::string buffer;
  const std::string_view all = bytes(buffer);
  uint32_t pos = 0;
  for (const ByteRange& cut : layout_.type_meta_cuts) {
    if (cut.empty()) continue;
    out.append(all.substr(pos, cut.begin - pos));
    pos = cut.end;
  }
  out.append(all.substr(pos));
}

ObjectConstSharedPtr Object::withResourceVersion(uint64_t rv) const {
  if (encoding_ == Encoding::Protobuf) return protobufWithResourceVersion(rv);
  const std::string digits = std::to_string(rv);
  ObjectMeta meta = meta_;
  meta.resource_version = rv;
  const Edit edit{layout_.resource_version_value, digits};
  std::string buffer;
  return build(std::move(meta), bytes(buffer), std::span(&edit, 1), layout_, encoding_);
}

size_t Object::overheadBytes() const {
  // make_shared puts the control block (two counters + vtable) next to the object.
  constexpr size_t kControlBlock = 16;
  return sizeof(Object) + kControlBlock + heapBytes(key_) + heapBytes(meta_.namespace_name) + heapBytes(meta_.name) +
         heapBytes(meta_.labels) +
         heapBytes(meta_.fields) + heapBytes(meta_.index_values);
}

}  // namespace cache
