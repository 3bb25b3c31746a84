#include "cache/protobuf/protobuf_object.h"

#include <tuple>

#include "cache/protobuf/protobuf_wire.h"

namespace cache::protobuf {
namespace {

// A map<string,string> entry {1: key, 2: value}; TypeMeta {1: apiVersion, 2: kind} has
// the same shape.
std::optional<std::pair<std::string_view, std::string_view>> parseStringPair(std::string_view entry) {
  std::pair<std::string_view, std::string_view> out;
  const bool ok = forEachField(entry, [&](uint32_t field, MessageReader& r) {
    return field == 1 ? r.read(out.first) : field == 2 ? r.read(out.second) : r.skip();
  });
  if (!ok) return std::nullopt;
  return out;
}

// metav1.Time {1: seconds, 2: nanos}: the seconds.
std::optional<int64_t> parseTimeSeconds(std::string_view time) {
  int64_t seconds = 0;
  if (!forEachField(time, [&](uint32_t field, MessageReader& r) { return field == 1 ? r.read(seconds) : r.skip(); })) {
    return std::nullopt;
  }
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

bool readObjectMetaField(uint32_t field, MessageReader& r, ObjectMetaView& view) {
  switch (field) {
    case kName: return r.read(view.name);
    case kGenerateName: return r.read(view.generate_name);
    case kNamespace: return r.read(view.namespace_);
    case kUid: return r.read(view.uid);
    case kResourceVersion:
      if (!r.read(view.resource_version)) return false;
      view.resource_version_value = {r.offsetOf(view.resource_version), view.resource_version.size()};
      return true;
    case kGeneration: return r.read(view.generation);
    case kCreationTimestamp:
    case kDeletionTimestamp: {
      std::string_view time;
      const auto seconds = r.read(time) ? parseTimeSeconds(time) : std::nullopt;
      if (!seconds) return false;
      if (field == kCreationTimestamp) view.creation_timestamp_seconds = *seconds;
      if (field == kDeletionTimestamp) view.has_deletion_timestamp = true;
      return true;
    }
    case kLabels:
    case kAnnotations: {
      std::string_view entry_bytes;
      const auto entry = r.read(entry_bytes) ? parseStringPair(entry_bytes) : std::nullopt;
      if (!entry) return false;
      (field == kLabels ? view.labels : view.annotations).push_back(*entry);
      return true;
    }
    default: return r.skip();
  }
}

}  // namespace

std::optional<Envelope> parseEnvelope(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  Envelope out;
  const bool ok = forEachField(bytes.substr(kMagic.size()), [&](uint32_t field, MessageReader& r) {
    switch (field) {
      case 1: {
        std::string_view type_meta;
        const auto pair = r.read(type_meta) ? parseStringPair(type_meta) : std::nullopt;
        if (pair) std::tie(out.api_version, out.kind) = *pair;
        return pair.has_value();
      }
      case 2: return r.read(out.raw);
      case 3: return r.read(out.content_encoding);
      case 4: return r.read(out.content_type);
      default: return r.skip();
    }
  });
  if (!ok) return std::nullopt;
  return out;
}

std::optional<StatusView> parseStatus(std::string_view message) {
  StatusView out;
  const bool ok = forEachField(message, [&](uint32_t field, MessageReader& r) {
    switch (field) {
      case 3: return r.read(out.message);
      case 4: return r.read(out.reason);
      case 6: {
        int64_t code = 0;
        if (!r.read(code)) return false;
        out.code = static_cast<int32_t>(code);  // int32 on the wire
        return true;
      }
      default: return r.skip();
    }
  });
  if (!ok) return std::nullopt;
  return out;
}

std::optional<ObjectMetaView> parseObjectMeta(std::string_view object) {
  ObjectMetaView view;
  bool seen = false;
  const bool ok = forEachField(object, [&](uint32_t field, MessageReader& r) {
    if (field != 1) return r.skip();
    std::string_view metadata;
    // A second ObjectMeta would be merged into the first by a decoder; the apiserver never
    // writes one, and spans into two messages could not be spliced: refused.
    if (seen || !r.read(metadata)) return false;
    seen = true;
    view.metadata = {r.offsetOf(metadata), metadata.size()};
    return forEachField(metadata, [&](uint32_t meta_field, MessageReader& m) {
      return readObjectMetaField(meta_field, m, view);
    });
  });
  if (!ok) return std::nullopt;
  // Relative to the metadata until here; an absent RV stays {0, 0}.
  if (view.resource_version.data() != nullptr) view.resource_version_value.offset += view.metadata.offset;
  return view;
}

}  // namespace cache::protobuf
