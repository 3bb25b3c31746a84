#include "tests/apiserver/storage/object_codec.h"

#include "tests/apiserver/media/go_json.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <random>
#include <vector>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace testapi {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

// ObjectMeta field order of the Go struct (k8s.io/apimachinery meta/v1 types.go).
constexpr std::array<std::string_view, 15> kMetaOrder = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields"};

void writeValue(Writer& w, const rapidjson::Value& v, bool sort_keys);

void writeMembersSorted(Writer& w, const rapidjson::Value& v, bool sort_nested) {
  std::vector<const rapidjson::Value::Member*> members;
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) members.push_back(&*it);
  std::sort(members.begin(), members.end(), [](auto* a, auto* b) {
    return std::string_view(a->name.GetString(), a->name.GetStringLength()) <
           std::string_view(b->name.GetString(), b->name.GetStringLength());
  });
  w.StartObject();
  for (auto* m : members) {
    w.Key(m->name.GetString(), m->name.GetStringLength());
    writeValue(w, m->value, sort_nested);
  }
  w.EndObject();
}

void writeValue(Writer& w, const rapidjson::Value& v, bool sort_keys) {
  if (v.IsObject()) {
    if (sort_keys) return writeMembersSorted(w, v, true);
    w.StartObject();
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
      w.Key(it->name.GetString(), it->name.GetStringLength());
      writeValue(w, it->value, false);
    }
    w.EndObject();
  } else if (v.IsArray()) {
    w.StartArray();
    for (const auto& e : v.GetArray()) writeValue(w, e, sort_keys);
    w.EndArray();
  } else {
    v.Accept(w);
  }
}

bool nameIs(const rapidjson::Value& name, std::string_view s) {
  return std::string_view(name.GetString(), name.GetStringLength()) == s;
}

// Go maps (labels, annotations, data) serialize with sorted keys.
bool isGoMap(std::string_view key) {
  return key == "labels" || key == "annotations" || key == "data" || key == "binaryData" ||
         key == "stringData" || key == "nodeSelector";
}

void writeMetadata(Writer& w, const rapidjson::Value& meta) {
  w.StartObject();
  for (auto field : kMetaOrder) {
    auto it = meta.FindMember(rapidjson::StringRef(field.data(), field.size()));
    if (it == meta.MemberEnd()) continue;
    w.Key(field.data(), field.size());
    writeValue(w, it->value, field == "labels" || field == "annotations");
  }
  for (auto it = meta.MemberBegin(); it != meta.MemberEnd(); ++it) {
    std::string_view k(it->name.GetString(), it->name.GetStringLength());
    if (std::find(kMetaOrder.begin(), kMetaOrder.end(), k) != kMetaOrder.end()) continue;
    w.Key(k.data(), k.size());
    writeValue(w, it->value, false);
  }
  w.EndObject();
}

void writeBuiltin(Writer& w, const rapidjson::Value& obj) {
  w.StartObject();
  for (const char* k : {"kind", "apiVersion"}) {
    if (auto* v = member(obj, k)) {
      w.Key(k);
      writeValue(w, *v, false);
    }
  }
  if (auto* m = member(obj, "metadata"); m && m->IsObject()) {
    w.Key("metadata");
    writeMetadata(w, *m);
  }
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
    if (nameIs(it->name, "kind") || nameIs(it->name, "apiVersion") || nameIs(it->name, "metadata") ||
        nameIs(it->name, "status"))
      continue;
    std::string_view k(it->name.GetString(), it->name.GetStringLength());
    w.Key(k.data(), k.size());
    writeValue(w, it->value, isGoMap(k));
  }
  if (auto* s = member(obj, "status")) {
    w.Key("status");
    writeValue(w, *s, false);
  }
  w.EndObject();
}

}  // namespace

void StoredObject::appendItem(std::string& out) const {
  if (item_offset == 0) {
    out += json;
    return;
  }
  out += '{';
  out.append(json, item_offset, std::string::npos);
}

std::string storageKey(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  std::string k;
  k.reserve(ns.size() + name.size() + 1);
  k.append(ns).append("/").append(name);
  return k;
}

std::string nowRfc3339() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string newUid() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t a = rng(), b = rng();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

std::string toJson(const rapidjson::Value& v) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  v.Accept(w);
  return {sb.GetString(), sb.GetSize()};
}

std::string canonicalJson(const ServedResource& res, const rapidjson::Value& obj) {
  if (!res.def.builtin) {
    // The apiextensions server holds custom resources as unstructured maps, which
    // encoding/json writes with sorted keys at every level, Go's string escaping and
    // number forms.
    std::string out;
    appendUnstructuredJson(out, obj);
    return out;
  }
  rapidjson::StringBuffer sb;
  Writer w(sb);
  writeBuiltin(w, obj);
  return {sb.GetString(), sb.GetSize()};
}

StoredObjectPtr makeStored(const ServedResource& res, const rapidjson::Value& obj) {
  auto s = std::make_shared<StoredObject>();
  s->json = canonicalJson(res, obj);
  if (res.def.builtin) {
    // {"kind":"K","apiVersion":"V", -> the item form starts right after this prefix.
    std::string prefix = "{\"kind\":" + jsonQuote(res.def.kind) + ",\"apiVersion\":" +
                         jsonQuote(res.def.groupVersion()) + ",";
    if (s->json.compare(0, prefix.size(), prefix) == 0) s->item_offset = prefix.size();
  }
  static const rapidjson::Value kEmpty(rapidjson::kObjectType);
  const rapidjson::Value* meta = member(obj, "metadata");
  if (!meta || !meta->IsObject()) meta = &kEmpty;
  s->ns = stringMember(*meta, "namespace");
  s->name = stringMember(*meta, "name");
  s->uid = stringMember(*meta, "uid");
  s->key = storageKey(s->ns, s->name);
  s->rv = parseResourceVersion(stringMember(*meta, "resourceVersion")).value_or(0);
  s->labels = extractLabels(obj);
  s->fields = extractFields(res.def, obj);
  return s;
}

void parseStored(const StoredObject& obj, rapidjson::Document& doc) {
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(obj.json.data(), obj.json.size());
}

StoredObjectPtr withResourceVersion(const ServedResource& res, const StoredObject& obj, uint64_t rv) {
  rapidjson::Document doc;
  parseStored(obj, doc);
  auto& meta = ensureObject(doc, "metadata", doc.GetAllocator());
  setString(meta, "resourceVersion", std::to_string(rv), doc.GetAllocator());
  return makeStored(res, doc);
}

const rapidjson::Value* member(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

std::string stringMember(const rapidjson::Value& v, const char* name) {
  auto* m = member(v, name);
  return (m && m->IsString()) ? std::string(m->GetString(), m->GetStringLength()) : std::string();
}

rapidjson::Value& ensureObject(rapidjson::Value& parent, const char* name, rapidjson::Document::AllocatorType& a) {
  auto it = parent.FindMember(name);
  if (it != parent.MemberEnd()) {
    if (!it->value.IsObject()) it->value.SetObject();
    return it->value;
  }
  parent.AddMember(rapidjson::Value(name, a), rapidjson::Value(rapidjson::kObjectType), a);
  return parent[name];
}

void setString(rapidjson::Value& obj, const char* name, std::string_view value,
               rapidjson::Document::AllocatorType& a) {
  rapidjson::Value v(value.data(), static_cast<rapidjson::SizeType>(value.size()), a);
  auto it = obj.FindMember(name);
  if (it != obj.MemberEnd())
    it->value = std::move(v);
  else
    obj.AddMember(rapidjson::Value(name, a), std::move(v), a);
}

std::string jsonQuote(std::string_view s) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return {sb.GetString(), sb.GetSize()};
}

}  // namespace testapi
