#pragma once
// Content negotiation (N1, N3, N4) and the transformed renderings it selects:
// Table and PartialObjectMetadata(List). Uses rendering.h when present; until
// then a minimal fallback (Name / Created At tables) keeps kubectl working.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api_types.h"
#include "semantics.h"

#if __has_include("rendering.h")
#include "rendering.h"
#define KTA_HAVE_RENDERING 1
#else
namespace testapi {
struct TableOptions {
  std::string include_object = "Metadata";
  bool column_definitions = true;
};
struct ListMetaOut {
  std::string resource_version;
  std::string continue_token;
  std::optional<int64_t> remaining_item_count;
};
}  // namespace testapi
#endif

namespace testapi {

enum class OutputKind { Object, Table, PartialObjectMetadata, PartialObjectMetadataList };

// Picks the first Accept entry the server can produce; 406 (N1/N4) when none fits.
Result<OutputKind> negotiateOutput(std::string_view accept, bool is_list, bool is_watch);

Result<std::string> tableFor(const ResourceDef& def, const std::vector<std::string_view>& objects,
                             const TableOptions& opts, const ListMetaOut& meta);
std::string partialObjectMetadataFor(std::string_view object_json);
std::string partialObjectMetadataListFor(const std::vector<std::string_view>& objects, const ListMetaOut& meta);

// Reads includeObject from the query (N3).
TableOptions tableOptionsFrom(const Query& query);

}  // namespace testapi
