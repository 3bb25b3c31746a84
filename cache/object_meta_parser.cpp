#include "cache/object_meta_parser.h"

#include <cstring>

#include <simdjson.h>

#include "cache/go_json.h"
#include "cache/object_extractor.h"

namespace cache {

namespace ondemand = simdjson::ondemand;

namespace {

Unexpected decodeError(std::string_view what, simdjson::error_code error) {
  return fail(Reason::Internal, "decoding " + std::string(what) + ": " + simdjson::error_message(error));
}

// `"kind":"Pod","apiVersion":"v1",`: the text spliced after '{' of items that lack it.
// The values are decoded strings (a list's kind may hold a JSON escape), so they are
// written as JSON again: spliced raw, a decoded control character made the item invalid.
std::string typeMetaPrefix(std::string_view kind, std::string_view api_version) {
  if (kind.empty() || api_version.empty()) return {};
  return R"("kind":)" + goJsonString(kind) + R"(,"apiVersion":)" + goJsonString(api_version) + ",";
}

}  // namespace

std::optional<uint64_t> parseObjectResourceVersion(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

class ObjectMetaParser::Impl {
 public:
  explicit Impl(ParserOptions options)
      : options_(std::move(options)),
        extractor_(options_),
        configured_type_meta_(typeMetaPrefix(options_.kind, options_.api_version)) {}

  // Copies `input` into the reusable padded scratch buffer.
  simdjson::padded_string_view pad(std::string_view input) {
    const size_t needed = input.size() + simdjson::SIMDJSON_PADDING;
    if (scratch_capacity_ < needed) {
      scratch_capacity_ = std::max(needed, scratch_capacity_ * 2);
      scratch_ = std::make_unique_for_overwrite<char[]>(scratch_capacity_);
    }
    std::memcpy(scratch_.get(), input.data(), input.size());
    std::memset(scratch_.get() + input.size(), 0, simdjson::SIMDJSON_PADDING);
    return simdjson::padded_string_view(scratch_.get(), input.size(), scratch_capacity_);
  }

  Result<ObjectConstSharedPtr> parseObject(simdjson::padded_string_view json) {
    ondemand::document doc;
    if (auto error = parser_.iterate(json).get(doc)) return decodeError("object", error);
    ondemand::value value;
    if (auto error = doc.get_value().get(value)) return decodeError("object", error);
    if (auto error = extractor_.extract(value, doc, json.data() + json.size())) return decodeError("object", error);
    return extractor_.build(configured_type_meta_);
  }

  Result<ParsedWatchEvent> parseWatchEvent(simdjson::padded_string_view line) {
    ondemand::document doc;
    ondemand::object envelope;
    if (auto error = parser_.iterate(line).get(doc)) return decodeError("watch event", error);
    if (auto error = doc.get_object().get(envelope)) return decodeError("watch event", error);
    std::optional<EventType> type;
    bool has_object = false;
    for (auto field_result : envelope) {
      ondemand::field field;
      if (auto error = std::move(field_result).get(field)) return decodeError("watch event", error);
      if (field.key() == "type") {
        std::string_view text;
        if (auto error = field.value().get_string().get(text)) return decodeError("watch event type", error);
        type = parseEventType(text);
        if (!type) return fail(Reason::Internal, "unknown watch event type \"" + std::string(text) + "\"");
      } else if (field.key() == "object") {
        if (auto error = extractor_.extract(field.value(), doc, line.data() + line.size())) {
          return decodeError("watch event object", error);
        }
        has_object = true;
      }
    }
    if (!type || !has_object) return fail(Reason::Internal, "watch event without type or object");
    ParsedWatchEvent event;
    event.type = *type;
    switch (*type) {
      case EventType::Bookmark: {
        auto rv = parseObjectResourceVersion(extractor_.resourceVersionText());
        if (!rv) return fail(Reason::Internal, "bookmark without a valid resourceVersion");
        event.resource_version = *rv;
        break;
      }
      case EventType::Error:
        event.error_status.assign(extractor_.bytes());
        break;
      default: {
        auto object = extractor_.build(configured_type_meta_);
        if (!object) return Unexpected{object.error()};
        event.resource_version = (*object)->resourceVersion();
        event.object = std::move(*object);
        break;
      }
    }
    return event;
  }

  Result<ParsedList> parseList(simdjson::padded_string_view body) {
    ondemand::document doc;
    ondemand::object list;
    if (auto error = parser_.iterate(body).get(doc)) return decodeError("list", error);
    if (auto error = doc.get_object().get(list)) return decodeError("list", error);
    ParsedList out;
    bool has_rv = false;
    std::string_view list_kind, list_api_version;
    std::string derived_type_meta;
    for (auto field_result : list) {
      ondemand::field field;
      if (auto error = std::move(field_result).get(field)) return decodeError("list", error);
      if (field.key() == "kind") {
        if (auto error = field.value().get_string().get(list_kind)) return decodeError("list kind", error);
      } else if (field.key() == "apiVersion") {
        if (auto error = field.value().get_string().get(list_api_version)) return decodeError("list apiVersion", error);
      } else if (field.key() == "metadata") {
        auto result = readListMeta(field.value(), out);
        if (!result) return Unexpected{result.error()};
        has_rv = true;
      } else if (field.key() == "items") {
        if (configured_type_meta_.empty() && list_kind.size() > 4 && list_kind.ends_with("List")) {
          derived_type_meta = typeMetaPrefix(list_kind.substr(0, list_kind.size() - 4), list_api_version);
        }
        const std::string& type_meta = configured_type_meta_.empty() ? derived_type_meta : configured_type_meta_;
        auto result = readItems(field.value(), doc, body, type_meta, out.items);
        if (!result) return Unexpected{result.error()};
      }
    }
    if (!has_rv) return fail(Reason::Internal, "list without metadata.resourceVersion");
    return out;
  }

  const ParserOptions& options() const { return options_; }

 private:
  Result<void> readListMeta(ondemand::value value, ParsedList& out) {
    ondemand::object meta;
    if (auto error = value.get_object().get(meta)) return decodeError("list metadata", error);
    bool has_rv = false;
    for (auto field_result : meta) {
      ondemand::field field;
      std::string_view text;
      if (auto error = std::move(field_result).get(field)) return decodeError("list metadata", error);
      if (field.key() == "resourceVersion") {
        if (auto error = field.value().get_string().get(text)) return decodeError("list resourceVersion", error);
        auto rv = parseObjectResourceVersion(text);
        if (!rv) return fail(Reason::Internal, "list has an invalid resourceVersion \"" + std::string(text) + "\"");
        out.resource_version = *rv;
        has_rv = true;
      } else if (field.key() == "continue") {
        if (auto error = field.value().get_string().get(text)) return decodeError("list continue", error);
        out.continue_token = text;
      }
    }
    if (!has_rv) return fail(Reason::Internal, "list without metadata.resourceVersion");
    return {};
  }

  Result<void> readItems(ondemand::value value, ondemand::document& doc, simdjson::padded_string_view body,
                         const std::string& type_meta, std::vector<ObjectConstSharedPtr>& items) {
    ondemand::json_type type;
    if (auto error = value.type().get(type)) return decodeError("list items", error);
    if (type == ondemand::json_type::null) return {};
    ondemand::array array;
    if (auto error = value.get_array().get(array)) return decodeError("list items", error);
    for (auto item_result : array) {
      ondemand::value item;
      if (auto error = std::move(item_result).get(item)) return decodeError("list item", error);
      if (auto error = extractor_.extract(item, doc, body.data() + body.size())) return decodeError("list item", error);
      auto object = extractor_.build(type_meta);
      if (!object) return Unexpected{object.error()};
      items.push_back(std::move(*object));
    }
    return {};
  }

  ParserOptions options_;
  ondemand::parser parser_;
  detail::ObjectExtractor extractor_;
  std::string configured_type_meta_;
  std::unique_ptr<char[]> scratch_;
  size_t scratch_capacity_ = 0;
};

ObjectMetaParser::ObjectMetaParser(ParserOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
ObjectMetaParser::~ObjectMetaParser() = default;

Result<ObjectConstSharedPtr> ObjectMetaParser::parseObject(std::string_view json) {
  return impl_->parseObject(impl_->pad(json));
}
Result<ObjectConstSharedPtr> ObjectMetaParser::parseObject(simdjson::padded_string_view json) {
  return impl_->parseObject(json);
}
Result<ParsedWatchEvent> ObjectMetaParser::parseWatchEvent(std::string_view line) {
  return impl_->parseWatchEvent(impl_->pad(line));
}
std::optional<EventType> ObjectMetaParser::objectEventType(std::string_view line) const {
  // The apiserver writes "type" first; lines of any other shape take the decoder's path.
  static constexpr std::pair<std::string_view, EventType> kPrefixes[] = {
      {R"({"type":"ADDED",)", EventType::Added},
      {R"({"type":"MODIFIED",)", EventType::Modified},
      {R"({"type":"DELETED",)", EventType::Deleted},
  };
  for (const auto& [prefix, type] : kPrefixes) {
    if (line.substr(0, prefix.size()) == prefix) return type;
  }
  return std::nullopt;
}
Result<ParsedWatchEvent> ObjectMetaParser::parseWatchEvent(simdjson::padded_string_view line) {
  return impl_->parseWatchEvent(line);
}
Result<ParsedList> ObjectMetaParser::parseList(std::string_view body) { return impl_->parseList(impl_->pad(body)); }
Result<ParsedList> ObjectMetaParser::parseList(simdjson::padded_string_view body) { return impl_->parseList(body); }
const ParserOptions& ObjectMetaParser::options() const { return impl_->options(); }

}  // namespace cache
