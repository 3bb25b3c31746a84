#include "cache/object_extractor.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace cache::detail {

namespace ondemand = simdjson::ondemand;
using simdjson::error_code;

namespace {

bool isJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The key of `field` as written (between the quotes). Keys we look for never contain
// escapes, so a raw comparison is exact for them; stage 1 has validated the string, and
// the input padding makes the scan safe.
std::string_view rawKey(const ondemand::field& field) {
  const char* begin = field.key().raw();
  const char* end = begin;
  while (*end != '"') end += (*end == '\\') ? 2 : 1;
  return {begin, static_cast<size_t>(end - begin)};
}

// Cuts that delete members `removed` (indices into `starts`, whose last entry is the
// closing brace) from an object whose '{' is at `open`. A removed member that is not
// last goes with the comma after it; a trailing run of removed members goes with the
// comma before it. Result is sorted; entries are [begin, end) pointers.
std::vector<std::pair<const char*, const char*>> memberCuts(const char* open, const std::vector<const char*>& starts,
                                                             std::vector<int> removed) {
  std::vector<std::pair<const char*, const char*>> cuts;
  const int members = static_cast<int>(starts.size()) - 1;
  std::sort(removed.begin(), removed.end());
  removed.erase(std::unique(removed.begin(), removed.end()), removed.end());
  int trailing = members;
  for (auto it = removed.rbegin(); it != removed.rend() && *it == trailing - 1; ++it) trailing = *it;
  for (int index : removed) {
    if (index < 0 || index >= trailing) continue;
    cuts.emplace_back(starts[index], starts[index + 1]);
  }
  if (trailing < members) {
    const char* from = trailing == 0 ? starts[0] : trimBack(open, starts[trailing]) - 1;
    cuts.emplace_back(from, starts[members]);
  }
  return cuts;
}

ByteRange relative(const char* base, const char* begin, const char* end) {
  return {static_cast<uint32_t>(begin - base), static_cast<uint32_t>(end - base)};
}

}  // namespace

const char* trimBack(const char* begin, const char* end) {
  while (end > begin && isJsonSpace(end[-1])) --end;
  return end;
}

const PathNode* PathNode::child(std::string_view k) const {
  for (const auto& c : children) {
    if (c.key == k) return &c;
  }
  return nullptr;
}

ObjectExtractor::ObjectExtractor(const ParserOptions& options) : options_(options) {
  std::vector<const std::vector<std::string>*> paths;
  if (options.field_spec) {
    for (const auto& f : options.field_spec->fields) paths.push_back(&f.path);
  }
  field_count_ = paths.size();
  for (const auto& f : options.index_paths) paths.push_back(&f.path);
  for (size_t target = 0; target < paths.size(); ++target) {
    PathNode* node = &root_;
    for (const auto& component : *paths[target]) {
      PathNode* next = const_cast<PathNode*>(node->child(component));
      if (next == nullptr) next = &node->children.emplace_back(PathNode{component, -1, {}});
      node = next;
    }
    if (node != &root_) node->target = static_cast<int>(target);
  }
  outputs_.resize(paths.size());
}

error_code ObjectExtractor::extract(ondemand::value value, ondemand::document& doc, const char* input_end) {
  meta_ = ObjectMeta{};
  member_starts_.clear();
  metadata_starts_.clear();
  kind_index_ = api_version_index_ = managed_fields_index_ = -1;
  rv_text_ = {};
  uid_text_ = {};
  metadata_ = {};
  has_rv_ = false;
  labels_.clear();
  for (auto& out : outputs_) out = {};

  begin_ = value.raw_json_token().data();
  ondemand::object object;
  SIMDJSON_TRY(value.get_object().get(object));
  for (auto field_result : object) {
    ondemand::field field;
    SIMDJSON_TRY(std::move(field_result).get(field));
    const std::string_view key = rawKey(field);
    const int index = static_cast<int>(member_starts_.size());
    member_starts_.push_back(key.data() - 1);
    if (key == "metadata") {
      // A second metadata would move the splice points (managedFields, RV) into it while
      // the first one's bytes stay: the stored JSON would break. Upstream never sends it.
      if (!metadata_starts_.empty()) return simdjson::TAPE_ERROR;
      SIMDJSON_TRY(extractMetadata(field.value(), doc, input_end));
    } else if (key == "kind") {
      kind_index_ = index;
    } else if (key == "apiVersion") {
      api_version_index_ = index;
    } else if (const PathNode* node = root_.child(key)) {
      SIMDJSON_TRY(extractPath(field.value(), *node));
    }
  }
  const char* location = nullptr;
  if (doc.current_location().get(location)) location = input_end;
  end_ = trimBack(begin_, location);
  if (end_ == begin_ || end_[-1] != '}') return simdjson::TAPE_ERROR;
  member_starts_.push_back(end_ - 1);
  finishFields();
  return simdjson::SUCCESS;
}

error_code ObjectExtractor::extractMetadata(ondemand::value value, ondemand::document& doc, const char* input_end) {
  const char* open = value.raw_json_token().data();
  const PathNode* metadata_paths = root_.child("metadata");
  auto capture = [&](std::string_view key, std::string_view text) {
    if (metadata_paths == nullptr) return;
    if (const PathNode* node = metadata_paths->child(key); node && node->target >= 0) outputs_[node->target] = text;
  };
  ondemand::object object;
  SIMDJSON_TRY(value.get_object().get(object));
  for (auto field_result : object) {
    ondemand::field field;
    SIMDJSON_TRY(std::move(field_result).get(field));
    const std::string_view key = rawKey(field);
    const int index = static_cast<int>(metadata_starts_.size());
    metadata_starts_.push_back(key.data() - 1);
    ondemand::value& v = field.value();
    std::string_view text;
    if (key == "name") {
      SIMDJSON_TRY(v.get_string().get(text));
      meta_.name = text;
      capture(key, text);
    } else if (key == "namespace") {
      SIMDJSON_TRY(v.get_string().get(text));
      meta_.namespace_name = text;
      capture(key, text);
    } else if (key == "uid") {
      // Kept as a range of the bytes (ObjectLayout::uid_value), not copied.
      const std::string_view token = v.raw_json_token();
      const size_t close = token.find('"', 1);
      if (token.empty() || token[0] != '"' || close == std::string_view::npos) return simdjson::INCORRECT_TYPE;
      uid_text_ = token.substr(1, close - 1);
      if (uid_text_.find('\\') != std::string_view::npos) {
        SIMDJSON_TRY(v.get_string().get(text));  // still a valid string, only not kept
        uid_text_ = {};
      }
    } else if (key == "resourceVersion") {
      // Keep the position of the digits so DELETED events can splice in the deletion RV.
      const std::string_view token = v.raw_json_token();
      const size_t close = token.find('"', 1);
      if (token.empty() || token[0] != '"' || close == std::string_view::npos) return simdjson::INCORRECT_TYPE;
      rv_text_ = token.substr(1, close - 1);
      has_rv_ = true;
      capture(key, rv_text_);
    } else if (key == "generation") {
      SIMDJSON_TRY(v.get_int64().get(meta_.generation));
    } else if (key == "deletionTimestamp") {
      ondemand::json_type type;
      SIMDJSON_TRY(v.type().get(type));
      meta_.has_deletion_timestamp = type != ondemand::json_type::null;
    } else if (key == "labels") {
      ondemand::object labels;
      SIMDJSON_TRY(v.get_object().get(labels));
      for (auto label_result : labels) {
        ondemand::field label;
        SIMDJSON_TRY(std::move(label_result).get(label));
        std::string_view label_key;
        // Both views live in the parser's string buffer until the next document.
        SIMDJSON_TRY(label.unescaped_key().get(label_key));
        SIMDJSON_TRY(label.value().get_string().get(text));
        labels_.emplace_back(label_key, text);
      }
    } else if (key == "managedFields") {
      managed_fields_index_ = index;
    } else if (metadata_paths != nullptr) {
      if (const PathNode* node = metadata_paths->child(key)) SIMDJSON_TRY(extractPath(v, *node));
    }
  }
  const char* location = nullptr;
  if (doc.current_location().get(location)) location = input_end;
  const char* end = trimBack(open, location);
  if (end == open || end[-1] != '}') return simdjson::TAPE_ERROR;
  metadata_starts_.push_back(end - 1);
  metadata_ = {open, end};
  return simdjson::SUCCESS;
}

error_code ObjectExtractor::extractPath(ondemand::value value, const PathNode& node) {
  ondemand::json_type type;
  SIMDJSON_TRY(value.type().get(type));
  if (node.target >= 0) {
    // Rendered as a field selector compares: strings as is, booleans and numbers as
    // written, null and containers as "".
    std::string_view& out = outputs_[node.target];
    switch (type) {
      case ondemand::json_type::string: {
        std::string_view text;
        SIMDJSON_TRY(value.get_string().get(text));
        out = text;
        break;
      }
      case ondemand::json_type::boolean: {
        bool b = false;
        SIMDJSON_TRY(value.get_bool().get(b));
        out = b ? "true" : "false";
        break;
      }
      case ondemand::json_type::number: {
        std::string_view token = value.raw_json_token();
        out = std::string_view(token.data(), static_cast<size_t>(trimBack(token.data(), token.data() + token.size()) - token.data()));
        break;
      }
      default:
        break;
    }
    return simdjson::SUCCESS;
  }
  if (type != ondemand::json_type::object) return simdjson::SUCCESS;
  ondemand::object object;
  SIMDJSON_TRY(value.get_object().get(object));
  for (auto field_result : object) {
    ondemand::field field;
    SIMDJSON_TRY(std::move(field_result).get(field));
    if (const PathNode* child = node.child(rawKey(field))) SIMDJSON_TRY(extractPath(field.value(), *child));
  }
  return simdjson::SUCCESS;
}

void ObjectExtractor::finishFields() {
  // Empty values are left out: "" is what a missing field compares as anyway (readers use
  // lookup(...).value_or("")), and pods usually leave 2 of their 8 fields empty.
  auto collect = [&](size_t first, size_t last, auto name_of) {
    pairs_.clear();
    for (size_t target = first; target < last; ++target) {
      if (!outputs_[target].empty()) pairs_.emplace_back(name_of(target), outputs_[target]);
    }
    return StringPairs::fromUnsorted(pairs_);
  };
  if (field_count_ > 0) {
    meta_.fields = collect(0, field_count_, [&](size_t t) -> std::string_view { return options_.field_spec->fields[t].name; });
  }
  if (!options_.index_paths.empty()) {
    meta_.index_values = collect(field_count_, outputs_.size(),
                                 [&](size_t t) -> std::string_view { return options_.index_paths[t - field_count_].name; });
  }
  meta_.labels = StringPairs::fromUnsorted(labels_);
}

Result<ObjectConstSharedPtr> ObjectExtractor::build(std::string_view type_meta) {
  if (meta_.name.empty()) return fail(Reason::Internal, "object has no metadata.name");
  const auto rv = has_rv_ ? parseObjectResourceVersion(rv_text_) : std::nullopt;
  if (!rv) {
    return fail(Reason::Internal, "object " + makeKey(meta_.namespace_name, meta_.name) +
                                      " has an invalid metadata.resourceVersion \"" + std::string(rv_text_) + "\"");
  }
  meta_.resource_version = *rv;

  std::array<Object::Edit, 2> edits;
  size_t edit_count = 0;
  ObjectLayout layout;
  const bool insert_type_meta = kind_index_ < 0 && api_version_index_ < 0 && !type_meta.empty() &&
                                member_starts_.size() > 1;
  if (insert_type_meta) {
    edits[edit_count++] = {ByteRange{1, 1}, type_meta};
    layout.type_meta_cuts[0] = ByteRange{1, 1};  // becomes the inserted text (see Object::create)
  } else {
    auto cuts = memberCuts(begin_, member_starts_, {kind_index_, api_version_index_});
    for (size_t i = 0; i < cuts.size() && i < layout.type_meta_cuts.size(); ++i) {
      layout.type_meta_cuts[i] = relative(begin_, cuts[i].first, cuts[i].second);
    }
  }
  if (options_.strip_managed_fields && managed_fields_index_ >= 0) {
    auto cuts = memberCuts(metadata_starts_.front() - 1, metadata_starts_, {managed_fields_index_});
    edits[edit_count++] = {relative(begin_, cuts.front().first, cuts.front().second), {}};
  }
  layout.resource_version_value = relative(begin_, rv_text_.data(), rv_text_.data() + rv_text_.size());
  layout.metadata = relative(begin_, metadata_.data(), metadata_.data() + metadata_.size());
  if (!uid_text_.empty()) layout.uid_value = relative(begin_, uid_text_.data(), uid_text_.data() + uid_text_.size());
  return Object::create(std::move(meta_), bytes(), std::span(edits.data(), edit_count), layout);
}

}  // namespace cache::detail
