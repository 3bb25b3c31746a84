#include "tests/apiserver/storage/resource_catalog.h"

#include <algorithm>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

namespace testapi {
namespace {

std::vector<std::string> stringList(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n && n.IsSequence())
    for (const auto& v : n) out.push_back(v.as<std::string>());
  return out;
}

std::string str(const YAML::Node& n, const char* key, std::string fallback = {}) {
  return n[key] ? n[key].as<std::string>() : fallback;
}

ServedResource parseEntry(const YAML::Node& n) {
  ServedResource r;
  ResourceDef& d = r.def;
  d.group = str(n, "group");
  d.version = str(n, "version");
  d.resource = str(n, "resource");
  d.kind = str(n, "kind");
  if (d.version.empty() || d.resource.empty() || d.kind.empty())
    throw std::runtime_error("resource entry needs version, resource and kind");
  d.list_kind = str(n, "listKind", d.kind + "List");
  std::string lower = d.kind;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  d.singular = str(n, "singular", lower);
  d.short_names = stringList(n["shortNames"]);
  d.categories = stringList(n["categories"]);
  d.namespaced = n["namespaced"] ? n["namespaced"].as<bool>() : true;
  d.builtin = n["builtin"] ? n["builtin"].as<bool>() : true;
  d.subresources = stringList(n["subresources"]);
  d.selectable_fields = stringList(n["selectableFields"]);
  if (const auto cols = n["printerColumns"]; cols && cols.IsSequence()) {
    for (const auto& c : cols) {
      PrinterColumn pc;
      pc.name = str(c, "name");
      pc.type = str(c, "type", "string");
      pc.json_path = str(c, "jsonPath");
      pc.description = str(c, "description");
      pc.priority = c["priority"] ? c["priority"].as<int>() : 0;
      d.printer_columns.push_back(std::move(pc));
    }
  }
  r.empty_object_tail = str(n, "emptyObject");
  return r;
}

}  // namespace

bool ServedResource::hasSubresource(std::string_view sub) const {
  return std::find(def.subresources.begin(), def.subresources.end(), sub) != def.subresources.end();
}

ResourceCatalog ResourceCatalog::fromYaml(const std::string& yaml_text) {
  ResourceCatalog c;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(std::string("resource catalog: ") + e.what());
  }
  const auto list = root["resources"];
  if (!list || !list.IsSequence()) throw std::runtime_error("resource catalog: missing 'resources' list");
  for (const auto& n : list) c.resources_.push_back(parseEntry(n));
  return c;
}

ResourceCatalog ResourceCatalog::builtinDefault() { return fromYaml(builtinYaml()); }

const ServedResource* ResourceCatalog::find(std::string_view group, std::string_view version,
                                            std::string_view resource) const {
  for (const auto& r : resources_)
    if (r.def.group == group && r.def.version == version && r.def.resource == resource) return &r;
  return nullptr;
}

const ServedResource* ResourceCatalog::findByKind(std::string_view group, std::string_view kind) const {
  for (const auto& r : resources_)
    if (r.def.group == group && r.def.kind == kind) return &r;
  return nullptr;
}

std::vector<std::string> ResourceCatalog::groupVersions() const {
  std::vector<std::string> out;
  for (const auto& r : resources_) {
    auto gv = r.def.groupVersion();
    if (std::find(out.begin(), out.end(), gv) == out.end()) out.push_back(gv);
  }
  return out;
}

std::vector<std::string> ResourceCatalog::groups() const {
  std::vector<std::string> out;
  for (const auto& r : resources_)
    if (!r.def.group.empty() && std::find(out.begin(), out.end(), r.def.group) == out.end())
      out.push_back(r.def.group);
  return out;
}

}  // namespace testapi
