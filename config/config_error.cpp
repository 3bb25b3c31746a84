#include "config/config_error.h"

namespace config {

ConfigError::ConfigError(const std::string& detail) : std::runtime_error("kube-cache-proxy: " + detail) {}

}  // namespace config
