#include "watch/reflector/list_page_decoder.h"

#include <string_view>
#include <utility>

#include <simdjson.h>

#include "cache/object_meta_parser.h"
#include "watch/reflector/watch_event_decoder.h"

namespace watch {
namespace {

namespace od = simdjson::ondemand;

std::string_view trimTrailingSpace(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string readListMetadata(od::object metadata, ListPage& page, bool& has_rv) {
  for (auto field_result : metadata) {
    od::field field;
    if (std::move(field_result).get(field)) return "malformed list metadata";
    std::string_view key;
    if (field.unescaped_key().get(key)) return "malformed list metadata key";
    if (key == "resourceVersion") {
      std::string_view rv;
      if (field.value().get_string().get(rv)) return "list resourceVersion is not a string";
      auto parsed = cache::parseObjectResourceVersion(rv);
      if (!parsed) return "list resourceVersion is not a decimal number: " + std::string(rv);
      page.resource_version = *parsed;
      has_rv = true;
    } else if (key == "continue") {
      std::string_view token;
      if (field.value().get_string().get(token)) return "list continue is not a string";
      page.continue_token.assign(token);
    } else if (key == "remainingItemCount") {
      int64_t remaining = 0;
      // Only for progress: a value that is not a count is left out, not an error.
      if (!field.value().get_int64().get(remaining) && remaining >= 0) page.remaining_item_count = uint64_t(remaining);
    }
  }
  return "";
}

std::string readItems(od::value& items_value, ListPage& page) {
  bool is_null = false;
  // Some servers send "items": null for an empty list.
  if (!items_value.is_null().get(is_null) && is_null) return "";
  od::array items;
  if (items_value.get_array().get(items)) return "list items is not an array";
  for (auto item_result : items) {
    od::object item;
    if (item_result.get_object().get(item)) return "list item is not a JSON object";
    std::string_view raw;
    if (item.raw_json().get(raw)) return "malformed list item";
    raw = trimTrailingSpace(raw);
    // On-demand skipping counts nesting without matching bracket kinds ({"a":[}]).
    if (!raw.ends_with('}')) return "malformed list item";
    page.items.emplace_back(raw);
  }
  return "";
}

}  // namespace

ListPageResult decodeListPage(std::string body) {
  ListPageResult result;
  const size_t size = body.size();
  body.resize(size + simdjson::SIMDJSON_PADDING);
  simdjson::padded_string_view input(body.data(), size, body.size());

  od::parser parser;
  od::document doc;
  if (parser.iterate(input).get(doc)) return {std::nullopt, "list body is not JSON"};
  od::object top;
  if (doc.get_object().get(top)) return {std::nullopt, "list body is not a JSON object"};

  ListPage page;
  bool has_rv = false;
  for (auto field_result : top) {
    od::field field;
    if (std::move(field_result).get(field)) return {std::nullopt, "malformed list body"};
    std::string_view key;
    if (field.unescaped_key().get(key)) return {std::nullopt, "malformed list key"};
    if (key == "metadata") {
      od::object metadata;
      if (field.value().get_object().get(metadata)) return {std::nullopt, "list metadata is not an object"};
      if (auto err = readListMetadata(metadata, page, has_rv); !err.empty()) return {std::nullopt, err};
    } else if (key == "items") {
      if (auto err = readItems(field.value(), page); !err.empty()) return {std::nullopt, err};
    }
  }
  if (!has_rv) return {std::nullopt, "list has no metadata.resourceVersion"};
  result.page = std::move(page);
  return result;
}

}  // namespace watch
