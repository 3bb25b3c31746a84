#include "proxy/upstream/discovery_documents.h"

#include <rapidjson/document.h>

namespace proxy::upstream {
namespace {

using rapidjson::Value;

std::optional<rapidjson::Document> parse(std::string_view body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
  return doc;
}

const Value* member(const Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

const Value* array(const Value& object, const char* name) {
  const Value* value = member(object, name);
  return value != nullptr && value->IsArray() ? value : nullptr;
}

std::string text(const Value& object, const char* name) {
  const Value* value = member(object, name);
  return value != nullptr && value->IsString() ? std::string(value->GetString(), value->GetStringLength()) : "";
}

std::vector<std::string> strings(const Value& object, const char* name) {
  std::vector<std::string> out;
  if (const Value* values = array(object, name)) {
    for (const Value& value : values->GetArray()) {
      if (value.IsString()) out.emplace_back(value.GetString(), value.GetStringLength());
    }
  }
  return out;
}

watch::ApiResource resourceFrom(std::string_view group, std::string_view version, std::string resource,
                                std::string kind, bool namespaced, std::vector<std::string> verbs) {
  watch::ApiResource out;
  out.group = std::string(group);
  out.version = std::string(version);
  out.resource = std::move(resource);
  out.kind = std::move(kind);
  // Discovery does not carry the list kind; every built-in and the CRD default is
  // <Kind>List (a CRD's own listKind is read from the CRD when it is cached).
  out.list_kind = out.kind + "List";
  out.namespaced = namespaced;
  out.verbs = std::move(verbs);
  return out;
}

}  // namespace

std::string groupResourceKey(std::string_view group, std::string_view resource) {
  std::string key(group);
  key += '/';
  key += resource;
  return key;
}

std::optional<std::vector<watch::ApiResource>> parseAggregatedDiscovery(std::string_view body) {
  auto doc = parse(body);
  if (!doc || text(*doc, "kind") != "APIGroupDiscoveryList") return std::nullopt;
  const Value* items = array(*doc, "items");
  if (items == nullptr) return std::nullopt;
  std::vector<watch::ApiResource> out;
  for (const Value& item : items->GetArray()) {
    const Value* metadata = member(item, "metadata");
    const std::string group = metadata != nullptr ? text(*metadata, "name") : "";
    const Value* versions = array(item, "versions");
    if (versions == nullptr) continue;
    for (const Value& version : versions->GetArray()) {
      const std::string version_name = text(version, "version");
      const Value* resources = array(version, "resources");
      if (version_name.empty() || resources == nullptr) continue;
      for (const Value& resource : resources->GetArray()) {
        std::string name = text(resource, "resource");
        if (name.empty() || name.find('/') != std::string::npos) continue;
        const Value* response_kind = member(resource, "responseKind");
        std::string kind = response_kind != nullptr ? text(*response_kind, "kind") : "";
        out.push_back(resourceFrom(group, version_name, std::move(name), std::move(kind),
                                   text(resource, "scope") != "Cluster", strings(resource, "verbs")));
      }
    }
  }
  return out;
}

std::optional<std::vector<std::string>> parseGroupVersions(std::string_view body) {
  auto doc = parse(body);
  const Value* groups = doc ? array(*doc, "groups") : nullptr;
  if (groups == nullptr) return std::nullopt;
  std::vector<std::string> out;
  for (const Value& group : groups->GetArray()) {
    const Value* preferred = member(group, "preferredVersion");
    const std::string preferred_gv = preferred != nullptr ? text(*preferred, "groupVersion") : "";
    if (!preferred_gv.empty()) out.push_back(preferred_gv);
    if (const Value* versions = array(group, "versions")) {
      for (const Value& version : versions->GetArray()) {
        std::string gv = text(version, "groupVersion");
        if (!gv.empty() && gv != preferred_gv) out.push_back(std::move(gv));
      }
    }
  }
  return out;
}

std::optional<std::vector<std::string>> parseCoreVersions(std::string_view body) {
  auto doc = parse(body);
  if (!doc || array(*doc, "versions") == nullptr) return std::nullopt;
  return strings(*doc, "versions");
}

std::optional<std::vector<watch::ApiResource>> parseResourceList(std::string_view body, std::string_view group,
                                                                 std::string_view version) {
  auto doc = parse(body);
  const Value* resources = doc ? array(*doc, "resources") : nullptr;
  if (resources == nullptr) return std::nullopt;
  std::vector<watch::ApiResource> out;
  for (const Value& resource : resources->GetArray()) {
    std::string name = text(resource, "name");
    if (name.empty() || name.find('/') != std::string::npos) continue;
    const Value* namespaced = member(resource, "namespaced");
    out.push_back(resourceFrom(group, version, std::move(name), text(resource, "kind"),
                               namespaced != nullptr && namespaced->IsBool() && namespaced->GetBool(),
                               strings(resource, "verbs")));
  }
  return out;
}

std::optional<std::set<std::string>> parseAggregatedGroupVersions(std::string_view body) {
  auto doc = parse(body);
  const Value* items = doc ? array(*doc, "items") : nullptr;
  if (items == nullptr) return std::nullopt;
  std::set<std::string> out;
  for (const Value& item : items->GetArray()) {
    const Value* spec = member(item, "spec");
    if (spec == nullptr) continue;
    const Value* service = member(*spec, "service");
    if (service == nullptr || service->IsNull()) continue;
    const std::string group = text(*spec, "group");
    const std::string version = text(*spec, "version");
    out.insert(group.empty() ? version : group + "/" + version);
  }
  return out;
}

std::optional<std::set<std::string>> parseCustomResourceKeys(std::string_view body) {
  auto doc = parse(body);
  const Value* items = doc ? array(*doc, "items") : nullptr;
  if (items == nullptr) return std::nullopt;
  std::set<std::string> out;
  for (const Value& item : items->GetArray()) {
    const Value* spec = member(item, "spec");
    const Value* names = spec != nullptr ? member(*spec, "names") : nullptr;
    if (names == nullptr) continue;
    out.insert(groupResourceKey(text(*spec, "group"), text(*names, "plural")));
  }
  return out;
}

std::optional<CustomResourceDefinitionFacts> parseCustomResourceDefinition(std::string_view body,
                                                                           std::string_view version) {
  auto doc = parse(body);
  const Value* spec = doc ? member(*doc, "spec") : nullptr;
  if (spec == nullptr || !spec->IsObject()) return std::nullopt;
  CustomResourceDefinitionFacts out;
  if (const Value* names = member(*spec, "names")) out.list_kind = text(*names, "listKind");
  if (const Value* versions = array(*spec, "versions")) {
    for (const Value& entry : versions->GetArray()) {
      if (text(entry, "name") != version) continue;
      if (const Value* fields = array(entry, "selectableFields")) {
        for (const Value& field : fields->GetArray()) {
          std::string path = text(field, "jsonPath");
          if (!path.empty() && path.front() == '.') path.erase(0, 1);
          if (!path.empty()) out.json_paths.push_back(std::move(path));
        }
      }
    }
  }
  return out;
}

}  // namespace proxy::upstream
