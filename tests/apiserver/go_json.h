#pragma once
// Re-encodes parsed JSON the way Go's encoding/json writes it (compact, HTML-safe
// string escaping, shortest float form), so rendered bodies match the apiserver's.
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "rendering.h"

namespace testapi {

void appendGoJson(std::string& out, const rapidjson::Value& v);
// ListMeta as the apiserver writes it: resourceVersion, continue, remainingItemCount,
// each omitted when empty.
std::string listMetaJson(const ListMetaOut& meta);
// json.MarshalIndent's layout ("" prefix, two-space indent, "key": value) of compact
// JSON, no trailing newline.
std::string indentJson(std::string_view compact);

}  // namespace testapi
