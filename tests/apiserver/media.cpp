#include "media.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace testapi {
namespace {

constexpr std::string_view kAccepted = "application/json, application/yaml, application/vnd.kubernetes.protobuf";
constexpr std::string_view kAcceptedWatch =
    "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct MediaRange {
  std::string_view type;
  std::string_view as, g, v;
};

MediaRange parseRange(std::string_view entry) {
  MediaRange m;
  size_t semi = entry.find(';');
  m.type = trim(entry.substr(0, semi));
  while (semi != std::string_view::npos) {
    size_t next = entry.find(';', semi + 1);
    auto param = trim(entry.substr(semi + 1, next == std::string_view::npos ? std::string_view::npos : next - semi - 1));
    auto eq = param.find('=');
    if (eq != std::string_view::npos) {
      auto k = trim(param.substr(0, eq)), val = trim(param.substr(eq + 1));
      if (k == "as") m.as = val;
      else if (k == "g") m.g = val;
      else if (k == "v") m.v = val;
    }
    semi = next;
  }
  return m;
}

#ifndef KTA_HAVE_RENDERING
std::string metaOf(std::string_view object_json) {
  rapidjson::Document d;
  d.Parse(object_json.data(), object_json.size());
  std::string out = R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)";
  if (d.IsObject() && d.HasMember("metadata")) {
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    d["metadata"].Accept(w);
    out.append(sb.GetString(), sb.GetSize());
  } else {
    out += "{}";
  }
  return out + "}";
}

std::string listMeta(const ListMetaOut& meta) {
  std::string s = "{\"resourceVersion\":\"" + meta.resource_version + "\"";
  if (!meta.continue_token.empty()) s += ",\"continue\":\"" + meta.continue_token + "\"";
  if (meta.remaining_item_count) s += ",\"remainingItemCount\":" + std::to_string(*meta.remaining_item_count);
  return s + "}";
}
#endif

}  // namespace

Result<OutputKind> negotiateOutput(std::string_view accept, bool is_list, bool is_watch) {
  if (trim(accept).empty()) return OutputKind::Object;
  bool wanted_metadata_mismatch = false;
  size_t pos = 0;
  while (pos <= accept.size()) {
    size_t comma = accept.find(',', pos);
    auto entry = accept.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? accept.size() + 1 : comma + 1;
    auto m = parseRange(entry);
    bool json = m.type == "application/json" || m.type == "*/*" || m.type == "application/*";
    if (!json) continue;  // protobuf, yaml, cbor: not produced here
    if (m.as.empty()) return OutputKind::Object;
    if (m.as == "Table" && m.g == "meta.k8s.io" && (m.v == "v1" || m.v == "v1beta1")) return OutputKind::Table;
    if (m.g == "meta.k8s.io" && m.v == "v1") {
      if (m.as == "PartialObjectMetadata" && (!is_list || is_watch)) return OutputKind::PartialObjectMetadata;
      if (m.as == "PartialObjectMetadataList" && is_list && !is_watch) return OutputKind::PartialObjectMetadataList;
      if (m.as == "PartialObjectMetadata" || m.as == "PartialObjectMetadataList") wanted_metadata_mismatch = true;
    }
  }
  if (wanted_metadata_mismatch) {
    return ApiError{406, "NotAcceptable",
                    is_list ? "you requested PartialObjectMetadata, but the requested object is a list"
                            : "you requested PartialObjectMetadataList, but the requested object is not a list"};
  }
  return notAcceptable(is_watch ? kAcceptedWatch : kAccepted);
}

TableOptions tableOptionsFrom(const Query& query) {
  TableOptions o;
  if (auto it = query.find("includeObject"); it != query.end() && !it->second.empty()) o.include_object = it->second;
  return o;
}

#ifdef KTA_HAVE_RENDERING
Result<std::string> tableFor(const ResourceDef& def, const std::vector<std::string_view>& objects,
                             const TableOptions& opts, const ListMetaOut& meta) {
  return renderTable(def, objects, opts, meta, std::chrono::system_clock::now());
}
std::string partialObjectMetadataFor(std::string_view object_json) { return renderPartialObjectMetadata(object_json); }
std::string partialObjectMetadataListFor(const std::vector<std::string_view>& objects, const ListMetaOut& meta) {
  return renderPartialObjectMetadataList(objects, meta);
}
#else
Result<std::string> tableFor(const ResourceDef&, const std::vector<std::string_view>& objects,
                             const TableOptions& opts, const ListMetaOut& meta) {
  if (opts.include_object != "None" && opts.include_object != "Metadata" && opts.include_object != "Object")
    return badRequest("Unable to convert to Table as requested: includeObject: Invalid value: \"" +
                      opts.include_object + "\": must be 'Metadata', 'Object', 'None', or empty");
  std::string s = R"({"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":)" + listMeta(meta);
  if (opts.column_definitions)
    s += R"(,"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"Name must be unique within a namespace.","priority":0},{"name":"Created At","type":"date","format":"","description":"CreationTimestamp is a timestamp representing the server time when this object was created.","priority":0}])";
  else
    s += R"(,"columnDefinitions":null)";
  s += ",\"rows\":[";
  bool first = true;
  for (auto obj : objects) {
    rapidjson::Document d;
    d.Parse(obj.data(), obj.size());
    std::string name, created;
    if (d.IsObject() && d.HasMember("metadata") && d["metadata"].IsObject()) {
      auto& m = d["metadata"];
      if (m.HasMember("name") && m["name"].IsString()) name = m["name"].GetString();
      if (m.HasMember("creationTimestamp") && m["creationTimestamp"].IsString()) created = m["creationTimestamp"].GetString();
    }
    if (!first) s += ",";
    first = false;
    s += "{\"cells\":[\"" + name + "\",\"" + created + "\"]";
    if (opts.include_object == "Metadata") s += ",\"object\":" + metaOf(obj);
    else if (opts.include_object == "Object") s += ",\"object\":" + std::string(obj);
    s += "}";
  }
  return s + "]}";
}
std::string partialObjectMetadataFor(std::string_view object_json) { return metaOf(object_json); }
std::string partialObjectMetadataListFor(const std::vector<std::string_view>& objects, const ListMetaOut& meta) {
  std::string s = R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":)" + listMeta(meta) + ",\"items\":[";
  for (size_t i = 0; i < objects.size(); ++i) {
    if (i) s += ",";
    s += metaOf(objects[i]);
  }
  return s + "]}";
}
#endif

}  // namespace testapi
