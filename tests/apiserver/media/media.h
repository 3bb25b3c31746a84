#pragma once
// Content negotiation (N1, N3, N4) and the transformed renderings it selects:
// Table and PartialObjectMetadata(List), rendered by rendering.h.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/apiserver/api_types.h"
#include "tests/apiserver/semantics.h"

#include "tests/apiserver/media/rendering.h"

namespace testapi {

enum class OutputKind { Object, Table, PartialObjectMetadata, PartialObjectMetadataList };

// Picks the first Accept entry the server can produce; 406 (N1/N4) when none fits.
Result<OutputKind> negotiateOutput(std::string_view accept, bool is_list, bool is_watch);
// Whether an error Status can be negotiated for `accept` (ErrorNegotiated's
// negotiation.DefaultEndpointRestrictions: a JSON, YAML or protobuf clause without
// as=/g=/v=, sv= or an unsupported stream=). When not, the Status is written raw.
bool errorMediaTypeNegotiable(std::string_view accept);
// The negotiated serializer of an error is protobuf: the first Accept entry that passes
// is application/vnd.kubernetes.protobuf (N2: the Status is then written in protobuf).
bool errorNegotiatesProtobuf(std::string_view accept);

Result<std::string> tableFor(const ResourceDef& def, const std::vector<std::string_view>& objects,
                             const TableOptions& opts, const ListMetaOut& meta);
std::string partialObjectMetadataFor(std::string_view object_json);
std::string partialObjectMetadataListFor(const std::vector<std::string_view>& objects, const ListMetaOut& meta);

// Reads includeObject from the query (N3).
TableOptions tableOptionsFrom(const Query& query);

}  // namespace testapi
