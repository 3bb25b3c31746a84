#pragma once
// The patch mechanisms behind applyPatch (patch.cpp). Each works in place on
// `target`, which starts as a copy of the stored object.
#include <string_view>

#include <rapidjson/document.h>

#include "tests/apiserver/semantics.h"

namespace testapi {

// RFC 7386 merge of `patch` into `doc` (evanphx/json-patch v4 MergePatch semantics:
// null deletes, objects merge, anything else replaces; nulls inside new objects pruned).
void mergePatchValue(rapidjson::Value& doc, const rapidjson::Value& patch, rapidjson::Document::AllocatorType& alloc);

// application/strategic-merge-patch+json on a built-in object (patch_strategic.cpp).
Result<bool> applyStrategicMergePatch(const rapidjson::Value& patch, rapidjson::Document& target);

// application/apply-patch+yaml: the applied configuration merged like a strategic
// merge patch (patch_strategic.cpp).
Result<bool> applyApplyPatch(std::string_view yaml, rapidjson::Document& target);

}  // namespace testapi
