#pragma once
// Go's time.ParseDuration syntax, so durations read the same as in kubectl and
// Kubernetes manifests: "5s", "1m30s", "250ms", "1.5h", "0".

#include <chrono>
#include <string_view>

namespace config {

// Throws std::invalid_argument with a reason such as
// `missing unit in duration "5"`.
std::chrono::nanoseconds parseDuration(std::string_view text);

}  // namespace config
