#include "watch/reflector/watch_event_decoder.h"

#include <utility>

#include <simdjson.h>

#include "cache/object_meta_parser.h"

namespace watch {
namespace {

namespace od = simdjson::ondemand;

constexpr std::string_view kInitialEventsEndAnnotation = "k8s.io/initial-events-end";

std::string_view trimTrailingSpace(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// Reads metadata.resourceVersion and the initial-events-end annotation.
// Returns an error text, or "" on success.
std::string readMetadata(od::object metadata, WatchEvent& event, bool& has_rv) {
  for (auto field_result : metadata) {
    od::field field;
    if (std::move(field_result).get(field)) return "malformed metadata";
    std::string_view key;
    if (field.unescaped_key().get(key)) return "malformed metadata key";
    if (key == "resourceVersion") {
      std::string_view rv;
      if (field.value().get_string().get(rv)) return "metadata.resourceVersion is not a string";
      auto parsed = cache::parseObjectResourceVersion(rv);
      if (!parsed) return "metadata.resourceVersion is not a decimal number: " + std::string(rv);
      event.resource_version = *parsed;
      has_rv = true;
    } else if (key == "annotations") {
      od::object annotations;
      // null annotations are legal and simply carry nothing.
      if (field.value().get_object().get(annotations)) continue;
      for (auto annotation_result : annotations) {
        od::field annotation;
        if (std::move(annotation_result).get(annotation)) return "malformed annotations";
        std::string_view name;
        if (annotation.unescaped_key().get(name)) return "malformed annotation key";
        if (name != kInitialEventsEndAnnotation) continue;
        std::string_view value;
        if (!annotation.value().get_string().get(value)) event.initial_events_end = value == "true";
      }
    }
  }
  return "";
}

// Reads what the reflector needs from "object": metadata for every event, and the Status
// fields (code, reason, message) that ERROR events carry at the top level.
std::string readObjectFields(od::object object, WatchEvent& event, bool& has_rv) {
  for (auto field_result : object) {
    od::field field;
    if (std::move(field_result).get(field)) return "malformed object";
    std::string_view key;
    if (field.unescaped_key().get(key)) return "malformed object key";
    if (key == "metadata") {
      od::object metadata;
      if (field.value().get_object().get(metadata)) continue;
      if (auto err = readMetadata(metadata, event, has_rv); !err.empty()) return err;
    } else if (key == "code") {
      int64_t code = 0;
      if (!field.value().get_int64().get(code)) event.status_code = code;
    } else if (key == "reason") {
      std::string_view reason;
      if (!field.value().get_string().get(reason)) event.status_reason.assign(reason);
    } else if (key == "message") {
      std::string_view message;
      if (!field.value().get_string().get(message)) event.status_message.assign(message);
    }
  }
  return "";
}

}  // namespace

struct WatchEventDecoder::Impl {
  od::parser parser;
  // The line is copied here because simdjson needs SIMDJSON_PADDING readable bytes after
  // the input, which a view into the receive buffer cannot promise. The copy is one
  // memcpy per line, small next to the parse and the copy of the object itself.
  std::string buffer;
};

WatchEventDecoder::WatchEventDecoder(cache::Encoding encoding)
    : encoding_(encoding), impl_(std::make_unique<Impl>()) {}
WatchEventDecoder::~WatchEventDecoder() = default;

DecodeResult WatchEventDecoder::decode(std::string_view line) {
  if (encoding_ == cache::Encoding::Protobuf) return decodeProtobufWatchEvent(line);
  DecodeResult result;
  auto fail = [&result](std::string why) {
    result.event.reset();
    result.error = std::move(why);
    return std::move(result);
  };

  auto& buffer = impl_->buffer;
  buffer.reserve(line.size() + simdjson::SIMDJSON_PADDING);
  buffer.assign(line);
  simdjson::padded_string_view input(buffer.data(), buffer.size(), buffer.capacity());

  od::document doc;
  if (impl_->parser.iterate(input).get(doc)) return fail("not JSON");
  od::object top;
  if (doc.get_object().get(top)) return fail("event is not a JSON object");

  WatchEvent event;
  bool has_type = false;
  bool has_object = false;
  bool has_rv = false;
  for (auto field_result : top) {
    od::field field;
    if (std::move(field_result).get(field)) return fail("malformed event");
    std::string_view key;
    if (field.unescaped_key().get(key)) return fail("malformed event key");
    if (key == "type") {
      std::string_view type_name;
      if (field.value().get_string().get(type_name)) return fail("event type is not a string");
      auto type = cache::parseEventType(type_name);
      if (!type) return fail("unknown event type " + std::string(type_name));
      event.type = *type;
      has_type = true;
    } else if (key == "object") {
      od::object object;
      if (field.value().get_object().get(object)) return fail("event object is not a JSON object");
      std::string_view raw;
      if (object.raw_json().get(raw)) return fail("malformed event object");
      raw = trimTrailingSpace(raw);
      // On-demand skipping counts nesting without matching bracket kinds, so
      // {"a":[}] reaches here whole; its bytes must not reach the store.
      if (!raw.ends_with('}')) return fail("malformed event object");
      event.object.assign(raw);
      if (object.reset().error()) return fail("malformed event object");
      if (auto err = readObjectFields(object, event, has_rv); !err.empty()) return fail(err);
      has_object = true;
    }
  }
  if (!has_type) return fail("event has no type");
  if (!has_object) return fail("event has no object");
  if (event.type != EventType::Error && !has_rv) {
    return fail("event object has no metadata.resourceVersion");
  }
  result.event = std::move(event);
  return result;
}

}  // namespace watch
