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
