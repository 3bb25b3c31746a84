#include "cache/protobuf_list.h"

#include "cache/protobuf_object.h"
#include "cache/protobuf_wire.h"

namespace cache::protobuf {
namespace {

// ListMeta (apimachinery meta/v1 generated.proto).
enum ListMetaField : uint32_t { kSelfLink = 1, kResourceVersion = 2, kContinue = 3, kRemainingItemCount = 4 };

std::optional<ListMetaView> parseListMeta(std::string_view bytes) {
  MessageReader reader(bytes);
  ListMetaView out;
  while (const uint32_t field = reader.next()) {
    std::optional<std::string_view> text;
    switch (field) {
      case kSelfLink: text = reader.bytes(); if (text) out.self_link = *text; break;
      case kResourceVersion: text = reader.bytes(); if (text) out.resource_version = *text; break;
      case kContinue: text = reader.bytes(); if (text) out.continue_token = *text; break;
      case kRemainingItemCount: {
        auto count = reader.varint();
        if (!count) return std::nullopt;
        out.remaining_item_count = *count;
        continue;
      }
      default: reader.skip(); continue;
    }
    if (!text) return std::nullopt;
  }
  if (reader.failed()) return std::nullopt;
  return out;
}

void appendListMeta(std::string& out, const ListMetaView& meta) {
  std::string body;
  appendBytesField(body, kSelfLink, meta.self_link);
  appendBytesField(body, kResourceVersion, meta.resource_version);
  appendBytesField(body, kContinue, meta.continue_token);
  if (meta.remaining_item_count) appendVarintField(body, kRemainingItemCount, static_cast<uint64_t>(*meta.remaining_item_count));
  appendBytesField(out, 1, body);
}

// metav1.WatchEvent {1: type, 2: RawExtension{1: raw}}.
std::optional<WatchEventView> parseWatchEvent(std::string_view bytes) {
  MessageReader reader(bytes);
  WatchEventView out;
  while (const uint32_t field = reader.next()) {
    if (field != 1 && field != 2) {
      reader.skip();
      continue;
    }
    auto value = reader.bytes();
    if (!value) return std::nullopt;
    if (field == 1) {
      out.type = *value;
      continue;
    }
    MessageReader raw_extension(*value);
    while (const uint32_t inner = raw_extension.next()) {
      if (inner != 1) {
        raw_extension.skip();
        continue;
      }
      auto raw = raw_extension.bytes();
      if (!raw) return std::nullopt;
      out.object = *raw;
    }
    if (raw_extension.failed()) return std::nullopt;
  }
  if (reader.failed()) return std::nullopt;
  return out;
}

uint32_t readBigEndian32(std::string_view bytes) {
  return (uint32_t(uint8_t(bytes[0])) << 24) | (uint32_t(uint8_t(bytes[1])) << 16) |
         (uint32_t(uint8_t(bytes[2])) << 8) | uint32_t(uint8_t(bytes[3]));
}

}  // namespace

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
  MessageReader reader(envelope->raw);
  while (const uint32_t field = reader.next()) {
    if (field != 1 && field != 2) {
      reader.skip();
      continue;
    }
    auto value = reader.bytes();
    if (!value) return std::nullopt;
    if (field == 2) {
      out.items.push_back(*value);
      continue;
    }
    auto meta = parseListMeta(*value);
    if (!meta) return std::nullopt;
    out.metadata = *meta;
  }
  if (reader.failed()) return std::nullopt;
  return out;
}

void appendList(std::string& out, std::string_view api_version, std::string_view kind, const ListMetaView& metadata,
                const std::vector<std::string_view>& items) {
  std::string list;
  appendListMeta(list, metadata);
  for (std::string_view item : items) appendBytesField(list, 2, item);
  appendEnvelope(out, api_version, kind, list);
}

std::optional<WatchEventView> takeWatchFrame(std::string_view& stream, bool& malformed) {
  malformed = false;
  if (stream.size() < 4) return std::nullopt;
  const uint32_t length = readBigEndian32(stream);
  if (stream.size() - 4 < length) return std::nullopt;
  // The frame holds the bare WatchEvent message, not an envelope (unlike objects and lists).
  auto event = parseWatchEvent(stream.substr(4, length));
  if (!event) {
    malformed = true;
    return std::nullopt;
  }
  stream.remove_prefix(4 + length);
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
