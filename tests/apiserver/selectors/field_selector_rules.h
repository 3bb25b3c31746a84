#pragma once
// Per-type field selector rules (S4-S6): which field labels a type's conversion
// accepts (and aliases), the error text it answers for the others, and how a stored
// object's selectable fields are computed. field_selector.cpp parses; this table
// knows the types.
#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "tests/apiserver/semantics.h"

namespace testapi {

// The canonical field for `label` (e.g. spec.host -> spec.nodeName), or the type's
// error text when the label is not supported.
std::variant<std::string, std::string> convertFieldLabel(const ResourceDef& def, std::string_view label);

// Syntax only (S3): what query decoding rejects before the type is known.
std::optional<ApiError> checkFieldSelectorSyntax(std::string_view text);

}  // namespace testapi
