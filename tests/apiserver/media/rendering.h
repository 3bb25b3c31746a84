#pragma once
// Alternative renderings of stored objects that clients ask for through Accept:
// metav1.Table (N3, kubectl get) and PartialObjectMetadata[List] (N4, metadata
// informers). Pure functions over the stored JSON; bodies are byte-compatible with
// the apiserver's encoder (Go escaping, field order).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/apiserver/semantics.h"

namespace testapi {

struct TableOptions {
  std::string include_object = "Metadata";  // includeObject None|Metadata|Object ("" = Metadata)
  bool column_definitions = true;           // false on watch events after the first
};

struct ListMetaOut {
  std::string resource_version;
  std::string continue_token;
  std::optional<int64_t> remaining_item_count;
  std::string shard_selector;  // metadata.shardInfo.selector of a typed list; "" = none
};

// A Table with one row per object, columns as the apiserver's printer for the type
// (built-in printers, CRD additionalPrinterColumns, or Name/Created At). A bad
// includeObject is the 400 of N3.
Result<std::string> renderTable(const ResourceDef&, const std::vector<std::string_view>& objects_json,
                                const TableOptions&, const ListMetaOut&, std::chrono::system_clock::time_point now);
// {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{...}}
std::string renderPartialObjectMetadata(std::string_view object_json);
std::string renderPartialObjectMetadataList(const std::vector<std::string_view>& objects_json, const ListMetaOut&);

}  // namespace testapi
