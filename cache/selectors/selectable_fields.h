#pragma once
// Which fields each resource exposes to field selectors (contract S4-S6), how each is
// read from an object, and how the apiserver words a rejection (S5). One table per
// resource serves both the selector parser and the Store's field extraction, so the
// accepted set and the extracted set cannot drift apart.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cache {

// How a selectable field's protobuf value is rendered for comparison: as its JSON
// scalar would be.
enum class ProtoScalar : uint8_t { String, Bool, Int };

// One selectable field: "spec.nodeName" read at path {"spec","nodeName"}.
struct SelectableField {
  std::string name;               // as written in a selector, e.g. "status.phase"
  std::vector<std::string> path;  // JSON path in the object; scalar rendered as the apiserver compares it
  // The same path as protobuf field numbers ({2, 10}: PodSpec is Pod's field 2, nodeName
  // PodSpec's 10, from k8s.io/api's generated.proto), for built-in types; empty where a
  // field has no value to read (status.podIPs, which the apiserver never compares).
  std::vector<uint32_t> proto_path;
  ProtoScalar proto_scalar = ProtoScalar::String;
};

// How the apiserver words "unsupported field" for a type family (S5).
enum class FieldErrorStyle {
  NotKnownField,      // "\"f\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
  LabelNotSupported,  // "field label not supported: f"
  BatchJob,           // "field label \"f\" not supported for batchv1.Job"
  ResourceSlice,      // "field label not supported for resource.k8s.io/<ver>, Kind=ResourceSlice: f"
};

struct FieldSpec {
  bool namespaced = true;
  FieldErrorStyle error_style = FieldErrorStyle::NotKnownField;
  std::string version;  // group version used in the ResourceSlice message
  // Fields besides metadata.name (and metadata.namespace when namespaced), in selector spelling.
  std::vector<SelectableField> fields;
  // Accepted aliases: selector spelling -> canonical name ("spec.host" -> "spec.nodeName").
  std::vector<std::pair<std::string, std::string>> aliases;

  // Built-in resources from the S4 table; any other resource gets NotKnownField with
  // only metadata.name / metadata.namespace.
  static std::shared_ptr<const FieldSpec> forBuiltin(std::string_view group, std::string_view version,
                                                    std::string_view resource, bool namespaced);
  // Custom resources (S6): selectableFields' jsonPaths without the leading '.'.
  static std::shared_ptr<const FieldSpec> forCustomResource(bool namespaced, const std::vector<std::string>& json_paths);
};

}  // namespace cache
