#pragma once
// Shared vocabulary of kube-test-apiserver: the resource catalog entry and the
// apiserver's error shape. Everything else in this folder builds on these two.

#include <cstdint>
#include <map>
#include <optional>
#include <optional>
#include <string>
#include <vector>

namespace testapi {

// One CRD-style printer column (additionalPrinterColumns).
struct PrinterColumn {
  std::string name;
  std::string type;  // "string", "integer", "date", ...
  std::string json_path;  // ".spec.size"
  std::string description;
  int priority = 0;
};

// One served resource. Built-in types and custom resources alike come from the
// catalog file (resources.yaml), so adding a resource needs no code.
struct ResourceDef {
  std::string group;       // "" for the core group
  std::string version;     // "v1"
  std::string resource;    // plural, "pods"
  std::string kind;        // "Pod"
  std::string list_kind;   // "PodList"
  std::string singular;    // "pod"
  std::vector<std::string> short_names;
  std::vector<std::string> categories;  // "all"
  bool namespaced = true;
  bool builtin = true;     // built-in list items carry no kind/apiVersion; custom resources do
  std::vector<std::string> subresources;       // "status", "log", "exec", "scale"
  std::vector<std::string> selectable_fields;  // CRD selectableFields, without the leading '.'
  std::vector<PrinterColumn> printer_columns;  // CRD additionalPrinterColumns

  std::string groupVersion() const { return group.empty() ? version : group + "/" + version; }
  // "pods" for core, "deployments.apps" otherwise: the qualified resource of error messages.
  std::string qualifiedResource() const { return group.empty() ? resource : resource + "." + group; }
};

struct StatusCause {
  std::string reason;  // the CauseType, serialized under "reason"
  std::string message;
  std::string field;
};

// A metav1.Status failure (contract E1/E2). toJson() renders it byte-for-byte as the
// apiserver does: empty details members omitted, causes' type under "reason".
struct ApiError {
  int code = 500;
  std::string reason;   // "NotFound", "Invalid", ... (empty for plain 500s)
  std::string message;
  // details
  std::string name;
  std::string group;
  std::string kind;     // plural resource for NotFound/Conflict/AlreadyExists
  std::vector<StatusCause> causes;
  int retry_after_seconds = 0;
  std::string metadata_continue;  // P7: ListMeta.continue on 410 for expired continuations

  std::string toJson() const;
  std::string toProtobuf() const;  // status_protobuf.cpp
};

}  // namespace testapi
