// PATCH bodies: content-type dispatch with the apiserver's 415, RFC 7386 merge patch
// and RFC 6902 JSON patch with the error texts of the library the apiserver uses
// (evanphx/json-patch v4), including its quirks: "replace" of a missing object key
// adds it, negative array indices count from the end.
#include "tests/apiserver/patch/patch_internal.h"
#include "tests/apiserver/semantics.h"
#include "tests/apiserver/status/status_util.h"

#include <vector>

namespace testapi {

namespace {

using Allocator = rapidjson::Document::AllocatorType;

constexpr std::string_view kJsonPatch = "application/json-patch+json";
constexpr std::string_view kMergePatch = "application/merge-patch+json";
constexpr std::string_view kStrategicPatch = "application/strategic-merge-patch+json";
constexpr std::string_view kApplyPatch = "application/apply-patch+yaml";

// A JSON patch failure: apierrors.NewGenericServerResponse(422, ...) carrying the
// library's text as an UnexpectedServerResponse cause.
ApiError patchApplyError(std::string text) {
  ApiError e;
  e.code = 422;
  e.reason = "Invalid";
  e.message = "the server rejected our request due to an error in our request";
  e.causes.push_back(StatusCause{"UnexpectedServerResponse", std::move(text), ""});
  return e;
}

struct OpError {
  std::string text;
};

// RFC 6901 token decoding.
std::string decodeToken(std::string_view t) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '~' && i + 1 < t.size() && (t[i + 1] == '1' || t[i + 1] == '0')) {
      out += t[i + 1] == '1' ? '/' : '~';
      ++i;
    } else {
      out += t[i];
    }
  }
  return out;
}

std::vector<std::string> splitPath(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    parts.emplace_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

// Go strconv.Atoi, with its error text.
std::variant<int64_t, std::string> atoi(std::string_view key) {
  std::string why;
  if (auto v = parseGoInt64(key, &why)) return *v;
  return "strconv.Atoi: parsing " + goQuote(key) + ": " + why;
}

std::string invalidIndex(int64_t idx) {
  return "Unable to access invalid index: " + std::to_string(idx) + ": invalid index referenced";
}

// The container holding the last token of `path`, or nullptr (findObject).
rapidjson::Value* findContainer(rapidjson::Value& doc, std::string_view path, std::string& key) {
  auto parts = splitPath(path);
  if (parts.size() < 2) return nullptr;
  rapidjson::Value* cur = &doc;
  for (size_t i = 1; i + 1 < parts.size(); ++i) {
    const std::string token = decodeToken(parts[i]);
    rapidjson::Value* next = nullptr;
    if (cur->IsObject()) {
      auto it = cur->FindMember(rapidjson::StringRef(token.data(), token.size()));
      if (it != cur->MemberEnd()) next = &it->value;
    } else if (cur->IsArray()) {
      auto idx = atoi(token);
      if (idx.index() != 0) return nullptr;
      int64_t n = std::get<int64_t>(idx);
      if (n < 0) n += cur->Size();
      if (n >= 0 && n < static_cast<int64_t>(cur->Size())) next = &(*cur)[static_cast<rapidjson::SizeType>(n)];
    }
    if (!next || !(next->IsObject() || next->IsArray())) return nullptr;
    cur = next;
  }
  key = decodeToken(parts.back());
  return cur;
}

// Resolves an array index for get/set/remove: negative counts from the end.
std::variant<rapidjson::SizeType, std::string> arrayIndex(const rapidjson::Value& ary, const std::string& key,
                                                          bool for_insert) {
  auto parsed = atoi(key);
  if (parsed.index() != 0) return std::get<std::string>(parsed);
  int64_t idx = std::get<int64_t>(parsed);
  const int64_t size = static_cast<int64_t>(ary.Size()) + (for_insert ? 1 : 0);
  if (idx >= size) return invalidIndex(idx);
  if (idx < 0) {
    if (idx < -size) return invalidIndex(idx);
    idx += size;
  }
  return static_cast<rapidjson::SizeType>(idx);
}

rapidjson::Value* getChild(rapidjson::Value& con, const std::string& key, std::string* error) {
  if (con.IsObject()) {
    auto it = con.FindMember(rapidjson::StringRef(key.data(), key.size()));
    return it == con.MemberEnd() ? nullptr : &it->value;
  }
  auto idx = arrayIndex(con, key, false);
  if (idx.index() != 0) {
    if (error) *error = std::get<std::string>(idx);
    return nullptr;
  }
  return &con[std::get<rapidjson::SizeType>(idx)];
}

std::optional<std::string> addChild(rapidjson::Value& con, const std::string& key, rapidjson::Value&& value,
                                    Allocator& alloc) {
  if (con.IsObject()) {
    auto it = con.FindMember(rapidjson::StringRef(key.data(), key.size()));
    if (it != con.MemberEnd()) {
      it->value = std::move(value);
    } else {
      con.AddMember(rapidjson::Value(key.c_str(), static_cast<rapidjson::SizeType>(key.size()), alloc), value, alloc);
    }
    return std::nullopt;
  }
  if (key == "-") {
    con.PushBack(value, alloc);
    return std::nullopt;
  }
  auto parsed = atoi(key);
  if (parsed.index() != 0)
    return "value was not a proper array index: '" + key + "': " + std::get<std::string>(parsed);
  auto idx = arrayIndex(con, key, true);
  if (idx.index() != 0) return std::get<std::string>(idx);
  const auto pos = std::get<rapidjson::SizeType>(idx);
  con.PushBack(rapidjson::Value(), alloc);
  for (auto i = con.Size() - 1; i > pos; --i) con[i] = std::move(con[i - 1]);
  con[pos] = std::move(value);
  return std::nullopt;
}

std::optional<std::string> removeChild(rapidjson::Value& con, const std::string& key) {
  if (con.IsObject()) {
    if (!con.RemoveMember(rapidjson::StringRef(key.data(), key.size())))
      return "Unable to remove nonexistent key: " + key + ": missing value";
    return std::nullopt;
  }
  auto idx = arrayIndex(con, key, false);
  if (idx.index() != 0) return std::get<std::string>(idx);
  con.Erase(con.Begin() + std::get<rapidjson::SizeType>(idx));
  return std::nullopt;
}

const rapidjson::Value* member(const rapidjson::Value& op, const char* name) {
  auto it = op.FindMember(name);
  return it == op.MemberEnd() ? nullptr : &it->value;
}

std::optional<std::string> stringMember(const rapidjson::Value& op, const char* name) {
  const auto* v = member(op, name);
  if (!v || !v->IsString()) return std::nullopt;
  return std::string(v->GetString(), v->GetStringLength());
}

std::optional<OpError> applyOperation(rapidjson::Document& doc, const rapidjson::Value& op) {
  Allocator& alloc = doc.GetAllocator();
  const std::string kind = stringMember(op, "op").value_or("unknown");
  const auto path = stringMember(op, "path");
  const rapidjson::Value null_value;
  const rapidjson::Value* value_ptr = member(op, "value");
  const rapidjson::Value& value = value_ptr ? *value_ptr : null_value;
  auto copyOf = [&](const rapidjson::Value& v) { return rapidjson::Value(v, alloc); };
  std::string key;

  if (kind == "add" || kind == "remove") {
    if (!path) return OpError{kind + " operation failed to decode path: missing value"};
    rapidjson::Value* con = findContainer(doc, *path, key);
    if (!con) return OpError{kind + " operation does not apply: doc is missing path: \"" + *path + "\": missing value"};
    auto err = kind == "add" ? addChild(*con, key, copyOf(value), alloc) : removeChild(*con, key);
    if (err) return OpError{"error in " + kind + " for path: '" + *path + "': " + *err};
    return std::nullopt;
  }
  if (kind == "replace") {
    if (!path) return OpError{"replace operation failed to decode path: missing value"};
    if (path->empty()) {
      if (!value.IsObject() && !value.IsArray()) return OpError{"replace operation value must be object or array"};
      rapidjson::Value whole(value, alloc);
      static_cast<rapidjson::Value&>(doc) = whole;  // RapidJSON assignment moves
      return std::nullopt;
    }
    rapidjson::Value* con = findContainer(doc, *path, key);
    if (!con) return OpError{"replace operation does not apply: doc is missing path: " + *path + ": missing value"};
    if (con->IsArray()) {
      rapidjson::Value* slot = getChild(*con, key, nullptr);
      if (!slot) return OpError{"replace operation does not apply: doc is missing key: " + *path + ": missing value"};
      *slot = copyOf(value);
      return std::nullopt;
    }
    addChild(*con, key, copyOf(value), alloc);  // a missing object key is added (v4 behaviour)
    return std::nullopt;
  }
  if (kind == "move" || kind == "copy") {
    const auto from = stringMember(op, "from");
    if (!from) return OpError{kind + " operation failed to decode from: missing value"};
    rapidjson::Value* con = findContainer(doc, *from, key);
    if (!con) return OpError{kind + " operation does not apply: doc is missing from path: " + *from + ": missing value"};
    std::string err;
    rapidjson::Value* src = getChild(*con, key, &err);
    if (!src) {
      if (!err.empty()) return OpError{"error in " + kind + " for " + (kind == "move" ? "path: '" + key : "from: '" + *from) + "': " + err};
      if (kind == "move") return OpError{"error in move for path: '" + key + "': Unable to remove nonexistent key: " + key + ": missing value"};
    }
    rapidjson::Value moved = src ? copyOf(*src) : rapidjson::Value();
    if (kind == "move") {
      if (auto e = removeChild(*con, key)) return OpError{"error in move for path: '" + key + "': " + *e};
    }
    if (!path) return OpError{kind + " operation failed to decode path: missing value"};
    std::string dest_key;
    rapidjson::Value* dest = findContainer(doc, *path, dest_key);
    if (!dest)
      return OpError{kind + " operation does not apply: doc is missing destination path: " + *path + ": missing value"};
    if (auto e = addChild(*dest, dest_key, std::move(moved), alloc))
      return OpError{(kind == "move" ? "error in move for path: '" + *path + "': " : "error while adding value during copy: ") + *e};
    return std::nullopt;
  }
  if (kind == "test") {
    if (!path) return OpError{"test operation failed to decode path: missing value"};
    const rapidjson::Value* have = nullptr;
    if (path->empty()) {
      have = &doc;
    } else {
      rapidjson::Value* con = findContainer(doc, *path, key);
      if (!con) return OpError{"test operation does not apply: is missing path: " + *path + ": missing value"};
      std::string err;
      have = getChild(*con, key, &err);
      if (!have && !err.empty()) return OpError{"error in test for path: '" + *path + "': " + err};
    }
    const bool equal = have ? (*have == value) : value.IsNull();
    if (!equal) return OpError{"testing value " + *path + " failed: test failed"};
    return std::nullopt;
  }
  return OpError{"Unexpected kind: " + kind};
}

Result<bool> applyJsonPatch(std::string_view patch_text, rapidjson::Document& target) {
  rapidjson::Document patch;
  if (auto syntax = parseJsonLikeGo(patch_text, patch)) return badRequest(*syntax);
  if (patch.IsNull()) return true;  // a null patch decodes to no operations
  if (!patch.IsArray()) {
    const char* kind = patch.IsObject() ? "object" : patch.IsString() ? "string" : patch.IsBool() ? "bool" : "number";
    return badRequest(std::string("json: cannot unmarshal ") + kind + " into Go value of type jsonpatch.Patch");
  }
  for (const auto& op : patch.GetArray()) {
    if (!op.IsObject() && !op.IsNull()) {
      const char* kind = op.IsArray() ? "array" : op.IsString() ? "string" : op.IsBool() ? "bool" : "number";
      return badRequest(std::string("json: cannot unmarshal ") + kind + " into Go value of type jsonpatch.Operation");
    }
  }
  for (const auto& op : patch.GetArray()) {
    const rapidjson::Value empty(rapidjson::kObjectType);
    if (auto err = applyOperation(target, op.IsNull() ? empty : op)) return patchApplyError(err->text);
  }
  return true;
}

void pruneNulls(rapidjson::Value& v) {
  if (v.IsObject()) {
    for (auto it = v.MemberBegin(); it != v.MemberEnd();) {
      if (it->value.IsNull()) {
        it = v.EraseMember(it);
      } else {
        pruneNulls(it->value);
        ++it;
      }
    }
  } else if (v.IsArray()) {
    for (auto& item : v.GetArray()) pruneNulls(item);
  }
}

Result<bool> applyMergePatch(std::string_view patch_text, rapidjson::Document& target) {
  rapidjson::Document patch;
  if (parseJsonLikeGo(patch_text, patch) || patch.IsNull()) return badRequest("Invalid JSON Patch");
  mergePatchValue(target, patch, target.GetAllocator());
  return true;
}

}  // namespace

void mergePatchValue(rapidjson::Value& doc, const rapidjson::Value& patch, Allocator& alloc) {
  if (!patch.IsObject() || !doc.IsObject()) {
    rapidjson::Value replacement(patch, alloc);
    if (!doc.IsObject()) pruneNulls(replacement);
    doc = std::move(replacement);
    return;
  }
  for (auto it = patch.MemberBegin(); it != patch.MemberEnd(); ++it) {
    auto cur = doc.FindMember(it->name);
    if (it->value.IsNull()) {
      if (cur != doc.MemberEnd()) doc.EraseMember(cur);
    } else if (cur == doc.MemberEnd() || cur->value.IsNull()) {
      rapidjson::Value v(it->value, alloc);
      pruneNulls(v);
      if (cur == doc.MemberEnd()) {
        doc.AddMember(rapidjson::Value(it->name, alloc), v, alloc);
      } else {
        cur->value = std::move(v);
      }
    } else {
      mergePatchValue(cur->value, it->value, alloc);
    }
  }
}

Result<bool> applyPatch(const ResourceDef& def, std::string_view content_type, const rapidjson::Value& original,
                        std::string_view patch, rapidjson::Document& target) {
  // The handler drops parameters ("; charset=utf-8") and surrounding spaces.
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);

  // Custom resources have no patch strategies, so their handler does not offer SMP.
  const bool smp_allowed = def.builtin;
  const bool known = type == kJsonPatch || type == kMergePatch || type == kApplyPatch ||
                     (smp_allowed && type == kStrategicPatch);
  if (!known) {
    std::string accepted = std::string(kJsonPatch) + ", " + std::string(kMergePatch);
    if (smp_allowed) accepted += ", " + std::string(kStrategicPatch);
    accepted += ", " + std::string(kApplyPatch);
    return unsupportedMediaType(accepted);
  }

  target.SetNull();
  target.CopyFrom(original, target.GetAllocator());
  if (type == kJsonPatch) return applyJsonPatch(patch, target);
  if (type == kMergePatch) return applyMergePatch(patch, target);
  if (type == kApplyPatch) return applyApplyPatch(patch, target);

  rapidjson::Document smp;
  if (auto syntax = parseJsonLikeGo(patch, smp)) return badRequest(*syntax);
  if (!smp.IsObject()) {
    const char* kind = smp.IsArray() ? "array" : smp.IsString() ? "string" : smp.IsBool() ? "bool" : smp.IsNull() ? "null" : "number";
    if (smp.IsNull()) return true;
    return badRequest(std::string("json: cannot unmarshal ") + kind + " into Go value of type map[string]interface {}");
  }
  return applyStrategicMergePatch(smp, target);
}

}  // namespace testapi
