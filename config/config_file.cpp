#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "config/config_error.h"
#include "config/files.h"
#include "config/settings.h"

namespace config {

namespace {

std::string keyOrigin(const std::string& key, const std::string& path) { return path + ": " + key; }

// YAML spells booleans many ways (true, yes, on); the value parsers speak Go's
// strconv.ParseBool, so normalize what YAML itself calls a boolean.
std::string scalarText(const ScalarField& field, const YAML::Node& value) {
  if (field.is_boolean) {
    bool flag = false;
    if (YAML::convert<bool>::decode(value, flag)) return flag ? "true" : "false";
  }
  return value.Scalar();
}

std::vector<std::string> listValues(const std::string& origin, const YAML::Node& value) {
  if (value.IsScalar()) return {value.Scalar()};
  if (!value.IsSequence()) throw ConfigError(origin + ": want a list or a comma-separated string");
  std::vector<std::string> out;
  for (const YAML::Node& item : value) {
    if (!item.IsScalar()) throw ConfigError(origin + ": list entries must be plain strings");
    out.push_back(item.Scalar());
  }
  return out;
}

// Splits "a,b" entries the way the command line does, so both spellings mean
// the same thing.
std::vector<std::string> splitCommas(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& value : values) {
    size_t start = 0;
    while (true) {
      const size_t comma = value.find(',', start);
      out.push_back(value.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

std::vector<std::string> stringList(const std::string& origin, const YAML::Node& value) {
  if (!value || value.IsNull()) return {};
  return splitCommas(listValues(origin, value));
}

// resources:
//   - resource: pods
//     namespaces: [web, db]
//     strip-managed-fields: true
//     indexes: {owner: metadata.labels.owner}
std::vector<ResourceSetting> resourceSettings(const std::string& origin, const YAML::Node& value) {
  if (!value.IsSequence()) throw ConfigError(origin + ": want a list of resources");
  std::vector<ResourceSetting> out;
  for (size_t i = 0; i < value.size(); ++i) {
    const YAML::Node& entry = value[i];
    ResourceSetting setting;
    setting.origin = origin + "[" + std::to_string(i) + "]";
    if (!entry.IsMap()) throw ConfigError(setting.origin + ": want a mapping with at least `resource`");
    for (const auto& field : entry) {
      const std::string key = field.first.Scalar();
      const YAML::Node& item = field.second;
      const std::string field_origin = setting.origin + "." + key;
      if (key == "resource") {
        if (!item.IsScalar()) throw ConfigError(field_origin + ": want a resource name such as pods");
        setting.resource = item.Scalar();
      } else if (key == "namespaces") {
        setting.namespaces = stringList(field_origin, item);
      } else if (key == "strip-managed-fields") {
        if (!item.IsScalar()) throw ConfigError(field_origin + ": want true or false");
        bool flag = false;
        const std::string text_value = YAML::convert<bool>::decode(item, flag) ? (flag ? "true" : "false") : item.Scalar();
        setting.strip_managed_fields = Setting{text_value, field_origin};
      } else if (key == "write-sync") {
        if (!item.IsScalar()) throw ConfigError(field_origin + ": want true or false");
        bool flag = false;
        const std::string text_value = YAML::convert<bool>::decode(item, flag) ? (flag ? "true" : "false") : item.Scalar();
        setting.write_sync = Setting{text_value, field_origin};
      } else if (key == "read-policy") {
        if (!item.IsScalar()) throw ConfigError(field_origin + ": want strict or cache");
        setting.read_policy = Setting{item.Scalar(), field_origin};
      } else if (key == "indexes") {
        if (!item.IsMap()) throw ConfigError(field_origin + ": want a mapping of index names to JSON paths");
        for (const auto& index : item) {
          if (!index.second.IsScalar()) throw ConfigError(field_origin + ": want a mapping of index names to JSON paths");
          setting.indexes.emplace_back(index.first.Scalar(), index.second.Scalar());
        }
      } else {
        throw ConfigError(setting.origin + ": unknown key \"" + key + "\" (want resource, namespaces, " +
                          "strip-managed-fields, indexes, write-sync, read-policy)");
      }
    }
    if (setting.resource.empty()) throw ConfigError(setting.origin + ": missing `resource`");
    out.push_back(std::move(setting));
  }
  return out;
}

}  // namespace

Settings readConfigFile(const std::string& path) {
  const std::string text = readFile(path, "--config");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError("config file " + path + ": malformed YAML at line " + std::to_string(e.mark.line + 1) +
                      ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  Settings out;
  if (root.IsNull()) return out;
  if (!root.IsMap()) throw ConfigError("config file " + path + ": want a mapping of flag names to values");

  const std::filesystem::path base_dir = std::filesystem::path(path).parent_path();
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) throw ConfigError("config file " + path + ": keys must be flag names");
    const std::string key = entry.first.Scalar();
    const YAML::Node& value = entry.second;
    const std::string origin = keyOrigin(key, path);
    bool known = false;
    if (key == "resources") {
      known = true;
      if (!value.IsNull()) out.resources = resourceSettings(origin, value);
    }
    for (const ScalarField& field : kScalarFields) {
      if (key != field.name) continue;
      known = true;
      if (value.IsNull()) break;
      if (!value.IsScalar()) throw ConfigError(origin + ": want a single value");
      std::string text_value = scalarText(field, value);
      if (field.is_path) text_value = resolveAgainst(base_dir, text_value).string();
      out.*field.member = Setting{std::move(text_value), origin};
    }
    for (const ListField& field : kListFields) {
      if (key != field.name) continue;
      known = true;
      if (value.IsNull()) break;
      out.*field.member = ListSetting{splitCommas(listValues(origin, value)), origin};
    }
    if (!known) {
      const std::string hint = key == "config" ? " (config files do not nest)" : "";
      throw ConfigError("config file " + path + ": unknown key \"" + key + "\"" + hint);
    }
  }
  return out;
}

}  // namespace config
