#pragma once
// ProtobufObjectParser: the store's parser for a resource cached in the apiserver's
// protobuf encoding (contract N2, W2). Objects are stored as the bare message of their
// type (an envelope's raw, or a List's item), exactly as received; name, namespace, RV,
// labels and the rest of ObjectMeta are read in place by field number
// (cache/protobuf/protobuf_object.h), and the selectable fields by each field's proto_path
// (cache/selectors/selectable_fields.h). Bookmark and ERROR events are read as far as the store
// needs; the reflector's decoder reads the rest.
//
// The kind and apiVersion are not stored: every writer knows them from the resource and
// puts them in the envelope it writes.
//
// Not thread-safe (one per reflector thread, like ObjectMetaParser); stateless in fact.

#include <memory>
#include <optional>
#include <string_view>

#include "cache/object_parser.h"
#include "cache/selectors/selectable_fields.h"

namespace cache {

struct ProtobufParserOptions {
  // Which selectable fields to extract into ObjectMeta::fields (those with a proto_path).
  std::shared_ptr<const FieldSpec> field_spec;
  // Ingestion transform: drop metadata.managedFields (ObjectMeta field 17) from the
  // stored bytes; the metadata's length is written anew.
  bool strip_managed_fields = false;
};

class ProtobufObjectParser final : public ObjectParser {
 public:
  explicit ProtobufObjectParser(ProtobufParserOptions options);

  Encoding encoding() const override { return Encoding::Protobuf; }
  Result<ObjectConstSharedPtr> parseObject(std::string_view message) override;
  Result<ParsedWatchEvent> parseWatchEvent(std::string_view event) override;
  std::optional<EventType> objectEventType(std::string_view event) const override;

 private:
  ProtobufParserOptions options_;
};

}  // namespace cache
