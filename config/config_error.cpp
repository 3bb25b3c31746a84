#include "config/config_error.h"

#include <algorithm>

namespace config {

namespace {

// The contract is one line per error; messages quote library text (YAML
// parser, CLI11) that could carry a newline.
std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

}  // namespace

ConfigError::ConfigError(const std::string& detail)
    : std::runtime_error(oneLine("kube-cache-proxy: " + detail)) {}

}  // namespace config
