#pragma once
// apimachinery pkg/util/validation checks used by selectors: each returns the list of
// problems with the apiserver's texts (empty when the value is valid).
#include <string>
#include <string_view>
#include <vector>

namespace testapi {

std::vector<std::string> isQualifiedName(std::string_view value);      // label keys
std::vector<std::string> isValidLabelValue(std::string_view value);
std::vector<std::string> isDns1123Subdomain(std::string_view value);
std::string joinMessages(const std::vector<std::string>& messages);    // "a; b"

}  // namespace testapi
