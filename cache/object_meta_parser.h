#pragma once
// ObjectMetaParser turns upstream JSON (one object, one watch event line, or a list
// body) into cache::Objects in a single simdjson on-demand pass per object: the pass
// both locates the object's bytes and extracts ObjectMeta, labels, selectable fields and
// custom index values. Each object's bytes are copied exactly once, into the Object.
//
// Every Object produced carries top-level kind/apiVersion: built-in list items arrive
// without them (L1), so the parser splices them in (from ParserOptions or the list's own
// kind minus "List") and records the range, so list writers can cut them out again.
//
// Not thread-safe: it owns a reusable simdjson parser. Use one per reflector thread.
// Bad input (malformed JSON, missing name, non-numeric resourceVersion) is an error
// Result, never a crash.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/event_type.h"
#include "cache/object.h"
#include "cache/object_parser.h"
#include "cache/result.h"
#include "cache/selectors/selectable_fields.h"

namespace simdjson {
class padded_string_view;
}

namespace cache {

struct ParserOptions {
  // Which selectable fields to extract into ObjectMeta::fields. May be null (none).
  std::shared_ptr<const FieldSpec> field_spec;
  // Custom indexes by JSON path: name = index name, path = where to read the value.
  std::vector<SelectableField> index_paths;
  // Ingestion transform: drop metadata.managedFields from the stored bytes (a splice).
  bool strip_managed_fields = false;
  // kind/apiVersion to give list items that lack them; derived from the list when empty.
  std::string kind;
  std::string api_version;
};

struct ParsedList {
  std::vector<ObjectConstSharedPtr> items;  // in the order received
  uint64_t resource_version = 0;
  std::string continue_token;
};

// Parses a resourceVersion the way upstream issues them: decimal uint64, no sign, no
// spaces (R1). Store-internal; request parsing belongs to cache::ResourceVersion.
std::optional<uint64_t> parseObjectResourceVersion(std::string_view text);

class ObjectMetaParser final : public ObjectParser {
 public:
  explicit ObjectMetaParser(ParserOptions options);
  ~ObjectMetaParser() override;
  ObjectMetaParser(const ObjectMetaParser&) = delete;
  ObjectMetaParser& operator=(const ObjectMetaParser&) = delete;

  // The string_view overloads copy the input into a padded scratch buffer first; the
  // padded_string_view overloads parse in place (input needs SIMDJSON_PADDING slack).
  Encoding encoding() const override { return Encoding::Json; }
  Result<ObjectConstSharedPtr> parseObject(std::string_view json) override;
  Result<ObjectConstSharedPtr> parseObject(simdjson::padded_string_view json);
  // One `{"type":"...","object":{...}}` line.
  Result<ParsedWatchEvent> parseWatchEvent(std::string_view line) override;
  std::optional<EventType> objectEventType(std::string_view line) const override;
  Result<ParsedWatchEvent> parseWatchEvent(simdjson::padded_string_view line);
  // A `{"kind":"PodList",...,"metadata":{"resourceVersion":..},"items":[...]}` body.
  Result<ParsedList> parseList(std::string_view body);
  Result<ParsedList> parseList(simdjson::padded_string_view body);

  const ParserOptions& options() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cache
