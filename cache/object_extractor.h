#pragma once
// Internal to ObjectMetaParser: the single on-demand pass over one JSON object that
// extracts ObjectMeta and records where the object, its members, its resourceVersion
// and its managedFields are in the input, so Object::create can copy the bytes once with
// every splice applied. Include only from .cpp files (it pulls in simdjson.h).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "cache/object.h"
#include "cache/object_meta_parser.h"
#include "cache/result.h"

namespace cache::detail {

// The selectable-field and custom-index paths, merged into a tree so one walk reads them
// all. A node with a target is a leaf whose scalar goes to outputs[target].
struct PathNode {
  std::string key;
  int target = -1;
  std::vector<PathNode> children;
  const PathNode* child(std::string_view k) const;
};

class ObjectExtractor {
 public:
  explicit ObjectExtractor(const ParserOptions& options);

  // Reads the object at `value`. `doc` is the document being iterated (its position
  // after the object marks the object's end); `input_end` bounds a top-level object.
  simdjson::error_code extract(simdjson::ondemand::value value, simdjson::ondemand::document& doc,
                               const char* input_end);

  // After extract(): the object's bytes in the input, and what was found.
  std::string_view bytes() const { return {begin_, static_cast<size_t>(end_ - begin_)}; }
  bool hasTypeMeta() const { return kind_index_ >= 0 && api_version_index_ >= 0; }
  std::string_view resourceVersionText() const { return rv_text_; }
  const ObjectMeta& meta() const { return meta_; }

  // Builds the Object: requires a name and a numeric RV. `type_meta` is spliced in
  // after '{' when the object has no kind/apiVersion (e.g. `"kind":"Pod","apiVersion":"v1",`).
  Result<ObjectConstSharedPtr> build(std::string_view type_meta);

 private:
  simdjson::error_code extractMetadata(simdjson::ondemand::value value, simdjson::ondemand::document& doc,
                                       const char* input_end);
  simdjson::error_code extractPath(simdjson::ondemand::value value, const PathNode& node);
  void finishFields();

  const ParserOptions& options_;
  PathNode root_;
  // Per-object state, reset by extract().
  ObjectMeta meta_;
  const char* begin_ = nullptr;
  const char* end_ = nullptr;
  std::vector<const char*> member_starts_;  // top-level member key quotes, then '}'
  std::vector<const char*> metadata_starts_;
  int kind_index_ = -1;
  int api_version_index_ = -1;
  int managed_fields_index_ = -1;
  std::string_view rv_text_;
  std::string_view uid_text_;  // between the quotes in the source; empty if absent or escaped
  std::string_view metadata_;  // the metadata object in the source, braces included
  bool has_rv_ = false;
  // Scratch reused across objects. The views point into the input or the parser's string
  // buffer, both valid until the next document; build() copies them into the Object.
  std::vector<StringPairs::value_type> labels_;  // metadata.labels
  std::vector<std::string_view> outputs_;        // field values then index values, by target
  std::vector<StringPairs::value_type> pairs_;   // outputs_ with their names, for one set
  size_t field_count_ = 0;
};

// Trims JSON whitespace from the end of [begin, end).
const char* trimBack(const char* begin, const char* end);

}  // namespace cache::detail
