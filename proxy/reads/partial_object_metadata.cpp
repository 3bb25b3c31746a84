#include "proxy/reads/partial_object_metadata.h"

#include <array>

namespace proxy {
namespace {

constexpr size_t kNpos = std::string_view::npos;

// ---- Boundaries in JSON that the ingestion parser validated. Only positions are found;
// every read is bounds-checked and anything unexpected reports kNpos / false.

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skipSpace(std::string_view s, size_t pos) {
  while (pos < s.size() && isSpace(s[pos])) ++pos;
  return pos;
}

// One past the closing quote of the string that opens at `pos`: the first quote after
// it not escaped by an odd run of backslashes (found with memchr: strings are most of
// the metadata bytes).
size_t stringEnd(std::string_view s, size_t pos) {
  for (size_t from = pos + 1;;) {
    const size_t quote = s.find('"', from);
    if (quote == kNpos) return kNpos;
    size_t backslashes = 0;
    while (quote - backslashes > pos + 1 && s[quote - 1 - backslashes] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return quote + 1;
    from = quote + 1;
  }
}

// One past the end of the value that starts at `pos`.
size_t valueEnd(std::string_view s, size_t pos) {
  if (pos >= s.size()) return kNpos;
  if (s[pos] == '"') return stringEnd(s, pos);
  if (s[pos] == '{' || s[pos] == '[') {
    size_t depth = 0;
    for (size_t i = pos; i < s.size(); ++i) {
      const char c = s[i];
      if (c == '"') {
        i = stringEnd(s, i);
        if (i == kNpos) return kNpos;
        --i;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
    }
    return kNpos;
  }
  size_t end = pos;  // number, true, false, null
  while (end < s.size() && !isSpace(s[end]) && s[end] != ',' && s[end] != '}' && s[end] != ']') ++end;
  return end == pos ? kNpos : end;
}

// Calls on_member(key, value) for each member of the object `json` (the whole of it),
// in order: the key as written between the quotes, the value without surrounding
// whitespace. False if `json` is not one object.
template <class OnMember>
bool forEachMember(std::string_view json, OnMember on_member) {
  size_t pos = skipSpace(json, 0);
  if (pos >= json.size() || json[pos] != '{') return false;
  pos = skipSpace(json, pos + 1);
  if (pos < json.size() && json[pos] == '}') return skipSpace(json, pos + 1) == json.size();
  while (true) {
    if (pos >= json.size() || json[pos] != '"') return false;
    const size_t key_end = stringEnd(json, pos);
    if (key_end == kNpos) return false;
    const std::string_view key = json.substr(pos + 1, key_end - pos - 2);
    pos = skipSpace(json, key_end);
    if (pos >= json.size() || json[pos] != ':') return false;
    pos = skipSpace(json, pos + 1);
    const size_t end = valueEnd(json, pos);
    if (end == kNpos) return false;
    on_member(key, json.substr(pos, end - pos));
    pos = skipSpace(json, end);
    if (pos >= json.size()) return false;
    if (json[pos] == '}') return skipSpace(json, pos + 1) == json.size();
    if (json[pos] != ',') return false;
    pos = skipSpace(json, pos + 1);
  }
}

// Calls on_element(value) for each element of the array `json`; on_element returns false
// to stop. False if `json` is not one array or on_element stopped.
template <class OnElement>
bool forEachElement(std::string_view json, OnElement on_element) {
  size_t pos = skipSpace(json, 0);
  if (pos >= json.size() || json[pos] != '[') return false;
  pos = skipSpace(json, pos + 1);
  if (pos < json.size() && json[pos] == ']') return skipSpace(json, pos + 1) == json.size();
  while (true) {
    const size_t end = valueEnd(json, pos);
    if (end == kNpos || !on_element(json.substr(pos, end - pos))) return false;
    pos = skipSpace(json, end);
    if (pos >= json.size()) return false;
    if (json[pos] == ']') return skipSpace(json, pos + 1) == json.size();
    if (json[pos] != ',') return false;
    pos = skipSpace(json, pos + 1);
  }
}

std::string_view keyOf(std::string_view key) { return key; }

// The values of an object's members named by `fields` (keyOf(field)), by position in
// `fields` ("" when absent). Go's map decoding keeps the last of repeated keys, and so
// does this.
template <class Field, size_t N>
bool readFields(std::string_view json, const std::array<Field, N>& fields, std::array<std::string_view, N>& values) {
  values.fill({});
  return forEachMember(json, [&](std::string_view key, std::string_view value) {
    for (size_t i = 0; i < N; ++i) {
      if (keyOf(fields[i]) == key) {
        values[i] = value;
        return;
      }
    }
  });
}

// ---- What Unstructured's getters (and the converter, for managedFields) make of each
// value, and whether encoding/json then writes it. A value of the wrong JSON type reads
// as the zero value and is omitted like one; the apiserver never stores such metadata.

bool isString(std::string_view v) { return !v.empty() && v.front() == '"'; }
bool isNonEmptyString(std::string_view v) { return isString(v) && v != R"("")"; }
bool isInteger(std::string_view v) {  // int64 to NestedInt64; 1.5 and 1e3 are float64
  if (!v.empty() && v.front() == '-') v.remove_prefix(1);
  if (v.empty()) return false;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}
bool isNonZeroInteger(std::string_view v) { return isInteger(v) && v.find_first_not_of("-0") != kNpos; }
bool isBool(std::string_view v) { return v == "true" || v == "false"; }
// metav1.Time.UnmarshalQueryParameter reads "" and "null" as the zero time.
bool isNonZeroTime(std::string_view v) { return isNonEmptyString(v) && v != R"("null")"; }
bool isNonEmpty(std::string_view v, char open) {
  if (v.empty() || v.front() != open) return false;
  const size_t next = skipSpace(v, 1);
  return next < v.size() && v[next] != (open == '{' ? '}' : ']');
}

class StructWriter {
 public:
  explicit StructWriter(std::string& out) : out_(out) { out_.push_back('{'); }
  void member(std::string_view key, std::string_view value) {
    if (!first_) out_.push_back(',');
    first_ = false;
    out_.push_back('"');
    out_.append(key);
    out_.append("\":");
    out_.append(value);
  }
  // A member whose value append_value() appends to the output; it returns false (having
  // appended nothing) to leave the member out after all.
  template <class AppendValue>
  void memberIf(std::string_view key, AppendValue append_value) {
    const size_t before = out_.size();
    const bool was_first = first_;
    member(key, {});
    if (!append_value()) {
      out_.resize(before);
      first_ = was_first;
    }
  }
  void close() { out_.push_back('}'); }

 private:
  std::string& out_;
  bool first_ = true;
};

// metav1.OwnerReference, from extractOwnerReference: the four strings always written
// (json tags without omitempty), the two *bool only when they hold a bool.
constexpr std::array<std::string_view, 6> kOwnerReferenceFields = {"apiVersion", "kind", "name", "uid", "controller",
                                                                   "blockOwnerDeletion"};
void appendOwnerReference(std::string& out, const std::array<std::string_view, 6>& values) {
  StructWriter w(out);
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string_view v = values[i];
    if (i < 4) {
      w.member(kOwnerReferenceFields[i], isString(v) ? v : R"("")");
    } else if (isBool(v)) {
      w.member(kOwnerReferenceFields[i], v);
    }
  }
  w.close();
}

// metav1.ManagedFieldsEntry, every field omitempty; time and fieldsV1 are pointers,
// written unless null (a time re-encodes as written; fieldsV1 is raw JSON that Go's
// encoder compacted with sorted keys both ways).
constexpr std::array<std::string_view, 7> kManagedFieldsEntryFields = {
    "manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"};
void appendManagedFieldsEntry(std::string& out, const std::array<std::string_view, 7>& values) {
  StructWriter w(out);
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string_view v = values[i];
    const bool pointer = kManagedFieldsEntryFields[i] == "time" || kManagedFieldsEntryFields[i] == "fieldsV1";
    if (pointer ? (!v.empty() && v != "null") : isNonEmptyString(v)) w.member(kManagedFieldsEntryFields[i], v);
  }
  w.close();
}

// Appends the list `list` of structs named by `keys`, each rewritten by `append`. Appends
// nothing and returns false when the list is empty or an element is not an object: the
// getters then return nil, and omitempty drops it.
template <size_t N, class Append>
bool appendStructList(std::string& out, std::string_view list, const std::array<std::string_view, N>& keys,
                      Append append) {
  const size_t start = out.size();
  out.push_back('[');
  bool any = false;
  std::array<std::string_view, N> values;
  const bool ok = forEachElement(list, [&](std::string_view element) {
    if (!readFields(element, keys, values)) return false;
    if (any) out.push_back(',');
    any = true;
    append(out, values);
    return true;
  });
  if (!ok || !any) {
    out.resize(start);
    return false;
  }
  out.push_back(']');
  return true;
}

enum class FieldKind { String, Integer, IntegerPointer, Time, StringMap, StringList, OwnerReferences, ManagedFields };

struct ObjectMetaField {
  std::string_view key;
  FieldKind kind;
};
std::string_view keyOf(const ObjectMetaField& field) { return field.key; }

// metav1.ObjectMeta's fields in declaration order (types.go), by json name.
constexpr std::array<ObjectMetaField, 15> kObjectMetaFields = {{
    {"name", FieldKind::String},
    {"generateName", FieldKind::String},
    {"namespace", FieldKind::String},
    {"selfLink", FieldKind::String},
    {"uid", FieldKind::String},
    {"resourceVersion", FieldKind::String},
    {"generation", FieldKind::Integer},
    {"creationTimestamp", FieldKind::Time},  // omitzero: the zero time is omitted
    {"deletionTimestamp", FieldKind::Time},
    {"deletionGracePeriodSeconds", FieldKind::IntegerPointer},
    {"labels", FieldKind::StringMap},
    {"annotations", FieldKind::StringMap},
    {"ownerReferences", FieldKind::OwnerReferences},
    {"finalizers", FieldKind::StringList},
    {"managedFields", FieldKind::ManagedFields},
}};

}  // namespace

std::string_view storedMetadata(const cache::Object& object, std::string_view bytes) {
  // The extractor recorded where metadata lies; no parse per served object.
  const cache::ByteRange range = object.layout().metadata;
  return range.empty() ? std::string_view("{}") : bytes.substr(range.begin, range.size());
}

std::string_view storedMetadata(const cache::Object& object, std::string& buffer) {
  return storedMetadata(object, object.bytes(buffer));
}

std::string objectMetaInStructOrder(std::string_view sorted_metadata) {
  std::array<std::string_view, kObjectMetaFields.size()> values;
  if (!readFields(sorted_metadata, kObjectMetaFields, values)) return std::string(sorted_metadata);
  std::string out;
  out.reserve(sorted_metadata.size());
  StructWriter w(out);
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string_view key = kObjectMetaFields[i].key;
    const std::string_view v = values[i];
    if (v.empty()) continue;
    switch (kObjectMetaFields[i].kind) {
      case FieldKind::String:
        if (isNonEmptyString(v)) w.member(key, v);
        break;
      case FieldKind::Integer:
        if (isNonZeroInteger(v)) w.member(key, v);
        break;
      case FieldKind::IntegerPointer:
        if (isInteger(v)) w.member(key, v);
        break;
      case FieldKind::Time:
        if (isNonZeroTime(v)) w.member(key, v);
        break;
      case FieldKind::StringMap:
        if (isNonEmpty(v, '{')) w.member(key, v);
        break;
      case FieldKind::StringList:
        if (isNonEmpty(v, '[')) w.member(key, v);
        break;
      case FieldKind::OwnerReferences:
        w.memberIf(key, [&] { return appendStructList(out, v, kOwnerReferenceFields, appendOwnerReference); });
        break;
      case FieldKind::ManagedFields:
        w.memberIf(key, [&] { return appendStructList(out, v, kManagedFieldsEntryFields, appendManagedFieldsEntry); });
        break;
    }
  }
  w.close();
  return out;
}

std::string partialObjectMetadata(const cache::Object& object, bool custom) {
  std::string out(kPartialObjectMetadataHead);
  std::string buffer;
  if (custom) {
    out += objectMetaInStructOrder(storedMetadata(object, buffer));
  } else {
    out += storedMetadata(object, buffer);
  }
  out += "}\n";
  return out;
}

}  // namespace proxy
