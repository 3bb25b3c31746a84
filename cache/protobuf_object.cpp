#include "cache/protobuf_object.h"

#include "cache/protobuf_wire.h"

namespace cache::protobuf {
namespace {

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
