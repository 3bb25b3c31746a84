#include "cache/protobuf_object.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace cache::protobuf {
namespace {

using google::protobuf::io::CodedInputStream;
using WireFormatLite = google::protobuf::internal::WireFormatLite;

// A cursor over one message. Length-delimited values come back as views into the input;
// everything else is skipped by wire type.
class MessageReader {
 public:
  explicit MessageReader(std::string_view message)
      : message_(message), in_(reinterpret_cast<const uint8_t*>(message.data()), static_cast<int>(message.size())) {
    // The whole message is in memory and we never recurse through in_, so the default
    // 64 MiB total limit is the only one that matters: objects are bounded far below it.
    in_.SetTotalBytesLimit(static_cast<int>(message.size()));
  }

  // The next field's number, or 0 at the end of the message. A tag cut short or naming
  // field 0 sets failed() (and also gives 0).
  uint32_t next() {
    if (failed_ || in_.CurrentPosition() >= static_cast<int>(message_.size())) return 0;
    uint32_t tag = 0;
    if (!in_.ReadVarint32(&tag) || WireFormatLite::GetTagFieldNumber(tag) == 0) {
      failed_ = true;
      return 0;
    }
    tag_ = tag;
    wire_type_ = WireFormatLite::GetTagWireType(tag);
    return WireFormatLite::GetTagFieldNumber(tag);
  }

  // The current field's bytes; nullopt (and failed()) when it is not length-delimited or
  // runs past the end.
  std::optional<std::string_view> bytes() {
    if (wire_type_ != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) return fail<std::string_view>();
    uint32_t length = 0;
    if (!in_.ReadVarint32(&length)) return fail<std::string_view>();
    const size_t offset = static_cast<size_t>(in_.CurrentPosition());
    if (length > message_.size() - offset || !in_.Skip(static_cast<int>(length))) return fail<std::string_view>();
    return message_.substr(offset, length);
  }

  std::optional<int64_t> varint() {
    uint64_t value = 0;
    if (wire_type_ != WireFormatLite::WIRETYPE_VARINT || !in_.ReadVarint64(&value)) return fail<int64_t>();
    return static_cast<int64_t>(value);
  }

  // Skips a field this reader does not want.
  void skip() {
    if (!WireFormatLite::SkipField(&in_, tag_)) failed_ = true;
  }

  bool failed() const { return failed_; }
  size_t offsetOf(std::string_view inner) const { return static_cast<size_t>(inner.data() - message_.data()); }

 private:
  template <class T>
  std::optional<T> fail() {
    failed_ = true;
    return std::nullopt;
  }

  std::string_view message_;
  CodedInputStream in_;
  uint32_t tag_ = 0;
  WireFormatLite::WireType wire_type_ = WireFormatLite::WIRETYPE_VARINT;
  bool failed_ = false;
};

// A map<string,string> entry: {1: key, 2: value}.
std::optional<std::pair<std::string_view, std::string_view>> parseMapEntry(std::string_view entry) {
  MessageReader reader(entry);
  std::pair<std::string_view, std::string_view> out;
  while (const uint32_t field = reader.next()) {
    if (field == 1 || field == 2) {
      auto value = reader.bytes();
      if (!value) return std::nullopt;
      (field == 1 ? out.first : out.second) = *value;
    } else {
      reader.skip();
    }
  }
  if (reader.failed()) return std::nullopt;
  return out;
}

// metav1.Time {1: seconds, 2: nanos}: the seconds.
std::optional<int64_t> parseTimeSeconds(std::string_view time) {
  MessageReader reader(time);
  int64_t seconds = 0;
  while (const uint32_t field = reader.next()) {
    if (field == 1) {
      auto value = reader.varint();
      if (!value) return std::nullopt;
      seconds = *value;
    } else {
      reader.skip();
    }
  }
  if (reader.failed()) return std::nullopt;
  return seconds;
}

// ObjectMeta field numbers (k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto).
enum ObjectMetaField : uint32_t {
  kName = 1,
  kGenerateName = 2,
  kNamespace = 3,
  kUid = 5,
  kResourceVersion = 6,
  kGeneration = 7,
  kCreationTimestamp = 8,
  kDeletionTimestamp = 9,
  kLabels = 11,
  kAnnotations = 12,
};

bool readStringField(MessageReader& reader, std::string_view& out) {
  auto value = reader.bytes();
  if (value) out = *value;
  return value.has_value();
}

bool parseObjectMetaFields(std::string_view metadata, ObjectMetaView& view) {
  MessageReader reader(metadata);
  while (const uint32_t field = reader.next()) {
    bool ok = true;
    switch (field) {
      case kName: ok = readStringField(reader, view.name); break;
      case kGenerateName: ok = readStringField(reader, view.generate_name); break;
      case kNamespace: ok = readStringField(reader, view.namespace_); break;
      case kUid: ok = readStringField(reader, view.uid); break;
      case kResourceVersion: {
        ok = readStringField(reader, view.resource_version);
        if (ok) view.resource_version_value.length = view.resource_version.size();
        if (ok) view.resource_version_value.offset = reader.offsetOf(view.resource_version);
        break;
      }
      case kGeneration: {
        auto value = reader.varint();
        ok = value.has_value();
        if (ok) view.generation = *value;
        break;
      }
      case kCreationTimestamp:
      case kDeletionTimestamp: {
        auto time = reader.bytes();
        auto seconds = time ? parseTimeSeconds(*time) : std::nullopt;
        ok = seconds.has_value();
        if (ok && field == kCreationTimestamp) view.creation_timestamp_seconds = *seconds;
        if (ok && field == kDeletionTimestamp) view.has_deletion_timestamp = true;
        break;
      }
      case kLabels:
      case kAnnotations: {
        auto entry_bytes = reader.bytes();
        auto entry = entry_bytes ? parseMapEntry(*entry_bytes) : std::nullopt;
        ok = entry.has_value();
        if (ok) (field == kLabels ? view.labels : view.annotations).push_back(*entry);
        break;
      }
      default: reader.skip();
    }
    if (!ok) return false;
  }
  return !reader.failed();
}

}  // namespace

std::optional<Envelope> parseEnvelope(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  MessageReader reader(bytes.substr(kMagic.size()));
  Envelope out;
  while (const uint32_t field = reader.next()) {
    std::optional<std::string_view> value;
    switch (field) {
      case 1: {  // typeMeta {1: apiVersion, 2: kind}
        value = reader.bytes();
        if (!value) return std::nullopt;
        auto type_meta = parseMapEntry(*value);  // same shape: two strings, fields 1 and 2
        if (!type_meta) return std::nullopt;
        out.api_version = type_meta->first;
        out.kind = type_meta->second;
        continue;
      }
      case 2: value = reader.bytes(); if (value) out.raw = *value; break;
      case 3: value = reader.bytes(); if (value) out.content_encoding = *value; break;
      case 4: value = reader.bytes(); if (value) out.content_type = *value; break;
      default: reader.skip(); continue;
    }
    if (!value) return std::nullopt;
  }
  if (reader.failed()) return std::nullopt;
  return out;
}

std::optional<ObjectMetaView> parseObjectMeta(std::string_view object) {
  MessageReader reader(object);
  ObjectMetaView view;
  bool seen = false;
  while (const uint32_t field = reader.next()) {
    if (field != 1) {
      reader.skip();
      continue;
    }
    auto metadata = reader.bytes();
    // A second ObjectMeta would be merged into the first by a decoder; the apiserver never
    // writes one, and spans into two messages could not be spliced: refused.
    if (!metadata || seen) return std::nullopt;
    seen = true;
    view.metadata = {reader.offsetOf(*metadata), metadata->size()};
    if (!parseObjectMetaFields(*metadata, view)) return std::nullopt;
    if (view.resource_version_value.length > 0) view.resource_version_value.offset += view.metadata.offset;
  }
  if (reader.failed()) return std::nullopt;
  return view;
}

}  // namespace cache::protobuf
