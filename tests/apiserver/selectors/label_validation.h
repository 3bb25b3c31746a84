#pragma once
// apimachinery checks used by selectors, each returning the list of problems
// with the apiserver's texts (empty when the value is valid). Label keys and values go
// through pkg/api/validate/content, whose length limits say "bytes"; the
// pkg/util/validation subdomain check (object names) still says "characters".
#include <string>
#include <string_view>
#include <vector>

namespace testapi {

std::vector<std::string> isLabelKey(std::string_view value);          // content.IsLabelKey
std::vector<std::string> isLabelValue(std::string_view value);        // content.IsLabelValue
std::vector<std::string> isDns1123Subdomain(std::string_view value);  // validation.IsDNS1123Subdomain
// validation.IsDNS1123Label(value) is empty: what ValidateNamespaceName accepts.
bool isDns1123Label(std::string_view value);
std::string joinMessages(const std::vector<std::string>& messages);   // "a; b"

}  // namespace testapi
