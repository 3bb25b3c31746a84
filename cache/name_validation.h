#pragma once
// apimachinery's name and label validation (pkg/util/validation), returning the same
// error strings so that selector rejections read exactly like the apiserver's.
// Each function returns the list of problems; an empty list means valid.

#include <string>
#include <string_view>
#include <vector>

namespace cache {

// A label key: optional DNS-1123 subdomain prefix (<= 253) and '/', then a name
// (<= 63, alphanumeric at both ends, '-', '_', '.' inside).
std::vector<std::string> isQualifiedName(std::string_view value);
// A label value: empty, or <= 63 characters with the qualified-name charset.
std::vector<std::string> isValidLabelValue(std::string_view value);
// A lowercase RFC 1123 subdomain (<= 253).
std::vector<std::string> isDNS1123Subdomain(std::string_view value);

}  // namespace cache
