#pragma once
// Invariants every cache::Object built by ObjectMetaParser must keep, whatever the
// upstream bytes were: the extracted metadata is in the bytes, the bytes parse again to
// the same metadata (the store re-parses them when it serves watches and selectors),
// and the splices the list and watch writers do on them (cutting kind/apiVersion, L1;
// rewriting the resourceVersion of DELETED events, W3) keep them parseable.
#include <cstdint>
#include <string>
#include <string_view>

#include "cache/object_meta_parser.h"
#include "fuzz_check.h"

namespace fuzz {

inline bool sameMeta(const cache::ObjectMeta& a, const cache::ObjectMeta& b) {
  return a.namespace_name == b.namespace_name && a.name == b.name &&
         a.resource_version == b.resource_version && a.generation == b.generation &&
         a.has_deletion_timestamp == b.has_deletion_timestamp && a.labels == b.labels && a.fields == b.fields &&
         a.index_values == b.index_values;
}

// `input` is the upstream text the object came from; `parser` is the one that built it.
inline void checkObject(cache::ObjectMetaParser& parser, const cache::Object& object, std::string_view input) {
  const cache::ObjectMeta& meta = object.meta();
  std::string scratch, other_scratch;  // uid() reads through a buffer (packed objects)
  FUZZ_CHECK(!meta.name.empty());
  FUZZ_CHECK(object.key() == cache::makeKey(meta.namespace_name, meta.name));
  // Without JSON escapes, strings are copied verbatim from the input.
  if (input.find('\\') == std::string_view::npos) {
    FUZZ_CHECK(input.find(meta.name) != std::string_view::npos);
    FUZZ_CHECK(input.find(meta.namespace_name) != std::string_view::npos);
    FUZZ_CHECK(input.find(object.uid(scratch)) != std::string_view::npos);
  }
  const std::string_view json = object.plainBytes();
  FUZZ_CHECK(json.starts_with('{') && json.ends_with('}'));

  const cache::ByteRange rv = object.layout().resource_version_value;
  FUZZ_CHECK(rv.begin <= rv.end && rv.end <= json.size());
  FUZZ_CHECK(cache::parseObjectResourceVersion(json.substr(rv.begin, rv.size())) == meta.resource_version);
  const cache::ByteRange uid = object.layout().uid_value;
  FUZZ_CHECK(uid.begin <= uid.end && uid.end <= json.size());
  const cache::ByteRange metadata = object.layout().metadata;
  FUZZ_CHECK(metadata.begin < metadata.end && metadata.end <= json.size());
  FUZZ_CHECK(json[metadata.begin] == '{' && json[metadata.end - 1] == '}');
  FUZZ_CHECK(uid.empty() || (uid.begin > metadata.begin && uid.end < metadata.end));

  const std::string copy(json);  // the parser's scratch may alias nothing of the object
  auto again = parser.parseObject(copy);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(sameMeta((*again)->meta(), meta));
  FUZZ_CHECK((*again)->uid(scratch) == object.uid(other_scratch));

  const uint64_t next = meta.resource_version == UINT64_MAX ? 0 : meta.resource_version + 1;
  const cache::ObjectConstSharedPtr bumped = object.withResourceVersion(next);
  FUZZ_CHECK(bumped->resourceVersion() == next && bumped->uid(scratch) == object.uid(other_scratch));
  auto bumped_again = parser.parseObject(std::string(bumped->plainBytes()));
  FUZZ_CHECK(bumped_again.has_value());
  FUZZ_CHECK((*bumped_again)->resourceVersion() == next && (*bumped_again)->key() == object.key());

  std::string without_type_meta;
  object.appendWithoutTypeMeta(without_type_meta);
  FUZZ_CHECK(without_type_meta.size() <= json.size());
  auto trimmed = parser.parseObject(without_type_meta);
  FUZZ_CHECK(trimmed.has_value());
  FUZZ_CHECK((*trimmed)->key() == object.key() && (*trimmed)->resourceVersion() == meta.resource_version);
}

// Parser options that exercise every extraction: pod selectable fields, a custom
// index, the managedFields splice, and configured type meta.
inline cache::ParserOptions podOptions() {
  cache::ParserOptions options;
  options.field_spec = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  options.index_paths = {{"by-node", {"spec", "nodeName"}}, {"by-app", {"metadata", "labels", "app"}}};
  options.strip_managed_fields = true;
  options.kind = "Pod";
  options.api_version = "v1";
  return options;
}

// Custom-resource options: selectable fields by JSON path, nothing stripped, type meta
// taken from the input.
inline cache::ParserOptions customOptions() {
  cache::ParserOptions options;
  options.field_spec = cache::FieldSpec::forCustomResource(false, {".spec.color", ".status.phase"});
  return options;
}

}  // namespace fuzz
