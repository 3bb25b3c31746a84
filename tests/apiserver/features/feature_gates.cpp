#include "tests/apiserver/features/feature_gates.h"

namespace testapi {
namespace {

FeatureGates& mutableGates() {
  static FeatureGates gates;
  return gates;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

const FeatureGates& featureGates() { return mutableGates(); }

bool setFeatureGates(std::string_view spec, std::string& error) {
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = trimmed(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      error = "missing bool value for " + std::string(item);
      return false;
    }
    const std::string_view name = trimmed(item.substr(0, eq));
    const std::string_view value = trimmed(item.substr(eq + 1));
    if (value != "true" && value != "false") {
      error = "invalid value of " + std::string(name) + "=" + std::string(value);
      return false;
    }
    if (name != "ShardedListAndWatch") {
      error = "unrecognized feature gate: " + std::string(name);
      return false;
    }
    mutableGates().sharded_list_and_watch = value == "true";
  }
  return true;
}

}  // namespace testapi
