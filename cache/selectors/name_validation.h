#pragma once
// The label key and value validation that labels.Parse applies to a label selector
// (apimachinery pkg/api/validate/content: IsLabelKey, IsLabelValue, IsDNS1123Subdomain),
// returning the same error strings so that selector rejections read exactly like the
// apiserver's. Each function returns the list of problems; an empty list means valid.
//
// Lengths are worded in bytes ("must be no more than 63 bytes", content.MaxLenError).
// pkg/util/validation's own MaxLenError still says "characters"; it is used for other
// names (DNS-1123 labels of object names, ...), which nothing here validates.

#include <string>
#include <string_view>
#include <vector>

namespace cache {

// A label key (content.IsLabelKey, formerly IsQualifiedName): optional DNS-1123
// subdomain prefix (<= 253 bytes) and '/', then a name (<= 63 bytes, alphanumeric at
// both ends, '-', '_', '.' inside).
std::vector<std::string> isQualifiedName(std::string_view value);
// A label value (content.IsLabelValue): empty, or <= 63 bytes with the label key charset.
std::vector<std::string> isValidLabelValue(std::string_view value);
// A lowercase RFC 1123 subdomain of <= 253 bytes (content.IsDNS1123Subdomain).
std::vector<std::string> isDNS1123Subdomain(std::string_view value);
// A lowercase RFC 1123 label (validation.IsDNS1123Label): 1 to 63 of [a-z0-9-], alphanumeric
// at both ends. Every namespace name is one (ValidateNamespaceName).
bool isDNS1123Label(std::string_view value);

}  // namespace cache
