#include "cache/protobuf/protobuf_object_parser.h"

#include <array>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cache/object_meta_parser.h"
#include "cache/protobuf/protobuf_list.h"
#include "cache/protobuf/protobuf_object.h"
#include "cache/protobuf/protobuf_wire.h"

namespace cache {
namespace {

using protobuf::appendBytesField;
using protobuf::forEachField;
using protobuf::MessageReader;

constexpr uint32_t kObjectMetaField = 1;
constexpr uint32_t kResourceVersionField = 6;
constexpr uint32_t kManagedFieldsField = 17;

Unexpected malformed(std::string_view what) {
  return fail(Reason::Internal, "decoding protobuf " + std::string(what) + ": malformed message");
}

// Where the metadata field's tag starts, given where its value starts: the tag (one byte,
// 0x0a) and the length as a canonical varint precede it. nullopt when the bytes there
// say otherwise (a writer other than the apiserver's), so nothing is spliced blindly.
std::optional<size_t> metadataTagOffset(std::string_view message, const protobuf::Span& metadata) {
  const size_t length_bytes = protobuf::varintSize(metadata.length);
  if (metadata.offset < length_bytes + 1) return std::nullopt;
  const size_t tag = metadata.offset - length_bytes - 1;
  if (static_cast<uint8_t>(message[tag]) != 0x0a) return std::nullopt;
  MessageReader reader(message.substr(tag, 1 + length_bytes + metadata.length));
  if (reader.next() != kObjectMetaField) return std::nullopt;
  const auto value = reader.bytes();
  if (!value || value->size() != metadata.length) return std::nullopt;
  return tag;
}

// `message` with its ObjectMeta replaced by `metadata` (tag and length written anew).
std::optional<std::string> withMetadata(std::string_view message, const protobuf::Span& old_metadata,
                                        std::string_view metadata) {
  const auto tag = metadataTagOffset(message, old_metadata);
  if (!tag) return std::nullopt;
  std::string out;
  out.reserve(message.size() + metadata.size() + 10 - old_metadata.length);
  out.append(message.substr(0, *tag));
  protobuf::appendBytesField(out, kObjectMetaField, metadata);
  out.append(message.substr(old_metadata.offset + old_metadata.length));
  return out;
}

// ObjectMeta without its managedFields entries.
std::optional<std::string> withoutManagedFields(std::string_view metadata) {
  std::string out;
  out.reserve(metadata.size());
  const bool ok = protobuf::forEachRawField(metadata, [&](uint32_t field, std::string_view bytes) {
    if (field != kManagedFieldsField) out.append(bytes);
  });
  if (!ok) return std::nullopt;
  return out;
}

// The value at `path` (field numbers, the last a scalar) rendered as the field selector
// compares it; "" when absent.
std::string_view readPath(std::string_view message, std::span<const uint32_t> path, ProtoScalar scalar,
                          std::string& storage) {
  std::string_view current = message;
  for (size_t i = 0; i < path.size(); ++i) {
    const bool last = i + 1 == path.size();
    std::string_view found;
    std::optional<int64_t> number;
    const bool ok = forEachField(current, [&](uint32_t field, MessageReader& r) {
      if (field != path[i]) return r.skip();
      // A repeated occurrence overrides the earlier one, as a decoder merges scalars.
      if (last && scalar != ProtoScalar::String) {
        number = r.varint();
        return number.has_value();
      }
      return r.read(found);
    });
    if (!ok) return {};
    if (last) {
      if (scalar == ProtoScalar::String) return found;
      if (!number) return {};
      if (scalar == ProtoScalar::Bool) return *number != 0 ? "true" : "false";
      storage = std::to_string(static_cast<int32_t>(*number));  // int32 fields only
      return storage;
    }
    if (found.data() == nullptr) return {};
    current = found;
  }
  return {};
}

}  // namespace

ProtobufObjectParser::ProtobufObjectParser(ProtobufParserOptions options) : options_(std::move(options)) {}

Result<ObjectConstSharedPtr> ProtobufObjectParser::parseObject(std::string_view message) {
  auto view = protobuf::parseObjectMeta(message);
  if (!view) return malformed("object");
  std::string stripped;
  if (options_.strip_managed_fields) {
    const std::string_view metadata = message.substr(view->metadata.offset, view->metadata.length);
    auto without = withoutManagedFields(metadata);
    if (!without) return malformed("object metadata");
    if (without->size() != metadata.size()) {
      auto rebuilt = withMetadata(message, view->metadata, *without);
      if (!rebuilt) return malformed("object metadata");
      stripped = std::move(*rebuilt);
      message = stripped;
      view = protobuf::parseObjectMeta(message);
      if (!view) return malformed("object");
    }
  }
  if (view->name.empty()) return fail(Reason::Internal, "object has no metadata.name");
  const auto rv = parseObjectResourceVersion(view->resource_version);
  if (!rv) {
    return fail(Reason::Internal, "object " + makeKey(view->namespace_, view->name) +
                                      " has an invalid metadata.resourceVersion \"" +
                                      std::string(view->resource_version) + "\"");
  }

  ObjectMeta meta;
  meta.namespace_name = view->namespace_;
  meta.name = view->name;
  meta.resource_version = *rv;
  meta.generation = view->generation;
  meta.has_deletion_timestamp = view->has_deletion_timestamp;
  std::vector<StringPairs::value_type> pairs(view->labels.begin(), view->labels.end());
  meta.labels = StringPairs::fromUnsorted(pairs);
  if (options_.field_spec) {
    const auto& fields = options_.field_spec->fields;
    // Rendered numbers live here while the set is built; reserved so views stay put.
    std::vector<std::string> storage(fields.size());
    pairs.clear();
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].proto_path.empty()) continue;
      const std::string_view value = readPath(message, fields[i].proto_path, fields[i].proto_scalar, storage[i]);
      if (!value.empty()) pairs.emplace_back(fields[i].name, value);
    }
    meta.fields = StringPairs::fromUnsorted(pairs);
  }

  auto range = [&](std::string_view inner) {
    if (inner.data() == nullptr) return ByteRange{};
    const auto begin = static_cast<uint32_t>(inner.data() - message.data());
    return ByteRange{begin, static_cast<uint32_t>(begin + inner.size())};
  };
  ObjectLayout layout;
  layout.metadata = {static_cast<uint32_t>(view->metadata.offset),
                     static_cast<uint32_t>(view->metadata.offset + view->metadata.length)};
  layout.resource_version_value = range(view->resource_version);
  layout.uid_value = range(view->uid);
  return Object::create(std::move(meta), message, {}, layout, Encoding::Protobuf);
}

Result<ParsedWatchEvent> ProtobufObjectParser::parseWatchEvent(std::string_view event) {
  const auto view = protobuf::parseWatchEvent(event);
  if (!view) return malformed("watch event");
  const auto type = parseEventType(view->type);
  if (!type) return fail(Reason::Internal, "unknown watch event type \"" + std::string(view->type) + "\"");
  ParsedWatchEvent out;
  out.type = *type;
  if (*type == EventType::Error) {
    out.error_status.assign(view->object);
    return out;
  }
  const auto envelope = protobuf::parseEnvelope(view->object);
  if (!envelope) return malformed("watch event object");
  if (*type == EventType::Bookmark) {
    const auto meta = protobuf::parseObjectMeta(envelope->raw);
    const auto rv = meta ? parseObjectResourceVersion(meta->resource_version) : std::nullopt;
    if (!rv) return fail(Reason::Internal, "bookmark without a valid resourceVersion");
    out.resource_version = *rv;
    return out;
  }
  auto object = parseObject(envelope->raw);
  if (!object) return Unexpected{object.error()};
  out.resource_version = (*object)->resourceVersion();
  out.object = std::move(*object);
  return out;
}

std::optional<EventType> ProtobufObjectParser::objectEventType(std::string_view event) const {
  // Field 1 (type) comes first in the apiserver's WatchEvent: tag 0x0a, length, name.
  static constexpr std::pair<std::string_view, EventType> kPrefixes[] = {
      {"\x0a\x05" "ADDED", EventType::Added},
      {"\x0a\x08" "MODIFIED", EventType::Modified},
      {"\x0a\x07" "DELETED", EventType::Deleted},
  };
  for (const auto& [prefix, type] : kPrefixes) {
    if (event.substr(0, prefix.size()) == prefix) return type;
  }
  return std::nullopt;
}

namespace protobuf {

std::optional<std::string> bookmarkObject(std::string_view sample, uint64_t rv, bool initial_events_end) {
  constexpr uint32_t kAnnotationsField = 12;
  const auto view = parseObjectMeta(sample);
  if (!view) return std::nullopt;
  const std::string_view metadata = sample.substr(view->metadata.offset, view->metadata.length);
  std::string annotation;
  appendBytesField(annotation, 1, "k8s.io/initial-events-end");
  appendBytesField(annotation, 2, "true");
  // The fields due before `next` that are not written yet.
  bool rv_written = false;
  bool annotations_written = !initial_events_end;
  std::string out;
  auto write_before = [&](uint32_t next) {
    if (!rv_written && next > kResourceVersionField) {
      appendBytesField(out, kResourceVersionField, std::to_string(rv));
      rv_written = true;
    }
    if (!annotations_written && next > kAnnotationsField) {
      appendBytesField(out, kAnnotationsField, annotation);
      annotations_written = true;
    }
  };
  const bool ok = forEachRawField(metadata, [&](uint32_t field, std::string_view bytes) {
    write_before(field);
    if (field != kResourceVersionField && field != kAnnotationsField) out.append(bytes);
  });
  if (!ok) return std::nullopt;
  write_before(UINT32_MAX);
  if (view->metadata.length == 0 && view->metadata.offset == 0) {
    // No ObjectMeta in the sample at all: it goes first, as field 1 does.
    std::string object;
    appendBytesField(object, kObjectMetaField, out);
    object.append(sample);
    return object;
  }
  return withMetadata(sample, view->metadata, out);
}

}  // namespace protobuf

// Object::withResourceVersion for a protobuf object: the RV value and the lengths of the
// RV field and the ObjectMeta around it change, so the metadata is written anew (an
// absent RV field goes before the first field numbered after it, as the apiserver orders
// fields) and the result is read again for its layout.
ObjectConstSharedPtr Object::protobufWithResourceVersion(uint64_t rv) const {
  const std::string digits = std::to_string(rv);
  std::string buffer;
  const std::string_view message = bytes(buffer);
  const std::string_view metadata = message.substr(layout_.metadata.begin, layout_.metadata.size());
  std::string new_metadata;
  new_metadata.reserve(metadata.size() + digits.size() + 2);
  bool written = false;
  const bool ok = protobuf::forEachRawField(metadata, [&](uint32_t field, std::string_view bytes) {
    if (field >= kResourceVersionField && !written) {
      protobuf::appendBytesField(new_metadata, kResourceVersionField, digits);
      written = true;
    }
    if (field != kResourceVersionField) new_metadata.append(bytes);
  });
  if (!written) protobuf::appendBytesField(new_metadata, kResourceVersionField, digits);
  const protobuf::Span old_span{layout_.metadata.begin, layout_.metadata.size()};
  auto rebuilt = ok ? withMetadata(message, old_span, new_metadata) : std::nullopt;
  ObjectMeta meta = meta_;
  meta.resource_version = rv;
  if (!rebuilt) {
    // Bytes the store accepted but cannot splice (not the apiserver's writer): keep them;
    // the store orders history by the meta's RV.
    return build(std::move(meta), message, {}, layout_, Encoding::Protobuf);
  }
  const auto view = protobuf::parseObjectMeta(*rebuilt);
  ObjectLayout layout = layout_;
  if (view) {
    layout.metadata = {static_cast<uint32_t>(view->metadata.offset),
                       static_cast<uint32_t>(view->metadata.offset + view->metadata.length)};
    layout.resource_version_value = {static_cast<uint32_t>(view->resource_version_value.offset),
                                     static_cast<uint32_t>(view->resource_version_value.offset +
                                                           view->resource_version_value.length)};
    if (view->uid.data() != nullptr) {
      const auto uid = static_cast<uint32_t>(view->uid.data() - rebuilt->data());
      layout.uid_value = {uid, static_cast<uint32_t>(uid + view->uid.size())};
    }
  }
  return build(std::move(meta), *rebuilt, {}, layout, Encoding::Protobuf);
}

}  // namespace cache
