#pragma once
// Re-encodes parsed JSON the way Go's encoding/json writes it (compact, HTML-safe
// string escaping, shortest float form), so rendered bodies match the apiserver's.
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "tests/apiserver/media/rendering.h"

namespace testapi {

// Keeps member order (a Go struct's fields, or a map already in order).
void appendGoJson(std::string& out, const rapidjson::Value& v);
// `v` as an unstructured object (map[string]interface{}) is encoded: map keys sorted
// byte-wise at every level, a repeated key keeping its last value as decoding into a
// map does; arrays keep their order. Numbers are what the apiserver's decoder made of
// them (sigs.k8s.io/json with preserved ints): an integer literal that fits int64
// stays one, every other number (fraction, exponent, out of int64 range) is a float64.
// As served after the round trip through etcd: a float64 -0 (written "-0", read back
// as the integer 0) is 0.
void appendUnstructuredJson(std::string& out, const rapidjson::Value& v);
// metav1.ObjectMeta as the typed struct encodes `meta` (an object's metadata as
// stored): fields in struct order, omitempty ones dropped, unknown keys dropped,
// labels/annotations sorted, ownerReferences and managedFields entries in their own
// struct order. What meta.AsPartialObjectMetadata keeps of an object (N4).
void appendTypedObjectMeta(std::string& out, const rapidjson::Value& meta);
// ListMeta as the apiserver writes it: resourceVersion, continue, remainingItemCount,
// each omitted when empty.
std::string listMetaJson(const ListMetaOut& meta);
// json.MarshalIndent's layout ("" prefix, two-space indent, "key": value) of compact
// JSON, no trailing newline.
std::string indentJson(std::string_view compact);

}  // namespace testapi
