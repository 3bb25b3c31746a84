#include "cache/protobuf/protobuf_list.h"

#include "cache/protobuf/protobuf_object.h"
#include "cache/protobuf/protobuf_wire.h"

namespace cache::protobuf {
namespace {

// ListMeta (apimachinery meta/v1 generated.proto).
enum ListMetaField : uint32_t {
  kSelfLink = 1,
  kResourceVersion = 2,
  kContinue = 3,
  kRemainingItemCount = 4,
  kShardInfo = 5
};

std::optional<ListMetaView> parseListMeta(std::string_view bytes) {
  ListMetaView out;
  const bool ok = forEachField(bytes, [&](uint32_t field, MessageReader& r) {
    switch (field) {
      case kSelfLink: return r.read(out.self_link);
      case kResourceVersion: return r.read(out.resource_version);
      case kContinue: return r.read(out.continue_token);
      case kRemainingItemCount: {
        int64_t count = 0;
        if (!r.read(count)) return false;
        out.remaining_item_count = count;
        return true;
      }
      case kShardInfo: {
        std::string_view shard_info;
        if (!r.read(shard_info)) return false;
        return forEachField(shard_info, [&](uint32_t f, MessageReader& inner) {
          return f == 1 ? inner.read(out.shard_selector) : inner.skip();
        });
      }
      default: return r.skip();
    }
  });
  if (!ok) return std::nullopt;
  return out;
}

void appendListMeta(std::string& out, const ListMetaView& meta) {
  std::string body;
  appendBytesField(body, kSelfLink, meta.self_link);
  appendBytesField(body, kResourceVersion, meta.resource_version);
  appendBytesField(body, kContinue, meta.continue_token);
  if (meta.remaining_item_count) appendVarintField(body, kRemainingItemCount, static_cast<uint64_t>(*meta.remaining_item_count));
  if (!meta.shard_selector.empty()) {
    std::string shard_info;
    appendBytesField(shard_info, 1, meta.shard_selector);
    appendBytesField(body, kShardInfo, shard_info);
  }
  appendBytesField(out, 1, body);
}

uint32_t readBigEndian32(std::string_view bytes) {
  return (uint32_t(uint8_t(bytes[0])) << 24) | (uint32_t(uint8_t(bytes[1])) << 16) |
         (uint32_t(uint8_t(bytes[2])) << 8) | uint32_t(uint8_t(bytes[3]));
}

}  // namespace

std::optional<WatchEventView> parseWatchEvent(std::string_view bytes) {
  WatchEventView out;
  const bool ok = forEachField(bytes, [&](uint32_t field, MessageReader& r) {
    if (field == 1) return r.read(out.type);
    if (field != 2) return r.skip();
    std::string_view raw_extension;
    return r.read(raw_extension) && forEachField(raw_extension, [&](uint32_t inner, MessageReader& e) {
             return inner == 1 ? e.read(out.object) : e.skip();
           });
  });
  if (!ok) return std::nullopt;
  return out;
}

void appendEnvelope(std::string& out, std::string_view api_version, std::string_view kind, std::string_view raw) {
  std::string type_meta;
  appendBytesField(type_meta, 1, api_version);
  appendBytesField(type_meta, 2, kind);
  out.append(kMagic);
  appendBytesField(out, 1, type_meta);
  appendBytesField(out, 2, raw);
  appendBytesField(out, 3, {});  // contentEncoding
  appendBytesField(out, 4, {});  // contentType
}

std::optional<ListView> parseList(std::string_view bytes) {
  const auto envelope = parseEnvelope(bytes);
  if (!envelope) return std::nullopt;
  ListView out;
  out.api_version = envelope->api_version;
  out.kind = envelope->kind;
  const bool ok = forEachField(envelope->raw, [&](uint32_t field, MessageReader& r) {
    std::string_view value;
    if (field == 2) return r.read(out.items.emplace_back());
    if (field != 1) return r.skip();
    const auto meta = r.read(value) ? parseListMeta(value) : std::nullopt;
    if (meta) out.metadata = *meta;
    return meta.has_value();
  });
  if (!ok) return std::nullopt;
  return out;
}

void appendList(std::string& out, std::string_view api_version, std::string_view kind, const ListMetaView& metadata,
                const std::vector<std::string_view>& items) {
  std::string list;
  appendListMeta(list, metadata);
  for (std::string_view item : items) appendBytesField(list, 2, item);
  appendEnvelope(out, api_version, kind, list);
}

std::string listHead(std::string_view api_version, std::string_view kind, const ListMetaView& metadata,
                     size_t items_bytes) {
  std::string list_meta;
  appendListMeta(list_meta, metadata);
  std::string type_meta;
  appendBytesField(type_meta, 1, api_version);
  appendBytesField(type_meta, 2, kind);
  std::string out(kMagic);
  appendBytesField(out, 1, type_meta);
  appendVarint(out, WireFormatLite::MakeTag(2, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  appendVarint(out, list_meta.size() + items_bytes);
  out += list_meta;
  return out;
}

void appendItemPrefix(std::string& out, size_t item_size) {
  appendVarint(out, WireFormatLite::MakeTag(2, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  appendVarint(out, item_size);
}

void appendPartialObjectMetadataItemPrefix(std::string& out, size_t metadata_size) {
  appendItemPrefix(out, 1 + varintSize(metadata_size) + metadata_size);
  appendVarint(out, WireFormatLite::MakeTag(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  appendVarint(out, metadata_size);
}

void appendPartialObjectMetadata(std::string& out, std::string_view metadata) {
  std::string message;
  appendBytesField(message, 1, metadata);
  appendEnvelope(out, "meta.k8s.io/v1", "PartialObjectMetadata", message);
}

std::optional<std::string_view> takeFrame(std::string_view& stream, bool& too_long) {
  too_long = false;
  if (stream.size() < 4) return std::nullopt;
  const uint32_t length = readBigEndian32(stream);
  too_long = length > kMaxFrameBytes;
  if (too_long || stream.size() - 4 < length) return std::nullopt;
  const std::string_view payload = stream.substr(4, length);
  stream.remove_prefix(4 + length);
  return payload;
}

std::optional<WatchEventView> takeWatchFrame(std::string_view& stream, bool& malformed) {
  std::string_view rest = stream;
  const auto payload = takeFrame(rest, malformed);
  if (!payload) return std::nullopt;
  // The frame holds the bare WatchEvent message, not an envelope (unlike objects and lists).
  auto event = parseWatchEvent(*payload);
  malformed = !event;
  if (event) stream = rest;
  return event;
}

void appendWatchFrame(std::string& out, std::string_view type, std::string_view enveloped_object) {
  std::string raw_extension;
  appendBytesField(raw_extension, 1, enveloped_object);
  std::string event;
  appendBytesField(event, 1, type);
  appendBytesField(event, 2, raw_extension);
  const uint32_t length = static_cast<uint32_t>(event.size());
  const char prefix[4] = {char(length >> 24), char(length >> 16), char(length >> 8), char(length)};
  out.append(prefix, 4);
  out.append(event);
}

}  // namespace cache::protobuf
