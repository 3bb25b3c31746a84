#include "cache/protobuf/protobuf_metadata_list.h"

#include <string>

#include "cache/object.h"
#include "cache/protobuf/protobuf_list.h"
#include "cache/protobuf/protobuf_object.h"
#include "cache/resource_version.h"

namespace cache::protobuf {
namespace {

Unexpected bad(std::string message) { return fail(Reason::BadRequest, std::move(message)); }

}  // namespace

Result<MetadataList> parseMetadataList(std::string_view body) {
  const std::optional<ListView> view = parseList(body);
  if (!view) return bad("not a protobuf list");
  if (view->kind != "PartialObjectMetadataList") return bad("not a PartialObjectMetadataList");
  MetadataList list;
  const auto list_rv = ResourceVersion::parse(view->metadata.resource_version);
  if (!list_rv || list_rv->isZero()) return bad("list resourceVersion is not a revision");
  list.resource_version = list_rv->value();
  list.has_continue = !view->metadata.continue_token.empty();
  list.items.reserve(view->items.size());
  for (std::string_view item : view->items) {
    // PartialObjectMetadata's field 1 is its ObjectMeta, as every top-level type's.
    const std::optional<ObjectMetaView> meta = parseObjectMeta(item);
    if (!meta || meta->name.empty()) return bad("item without name");
    const auto rv = ResourceVersion::parse(meta->resource_version);
    if (!rv || rv->isZero()) return bad("item resourceVersion is not a revision");
    list.items.emplace_back(makeKey(meta->namespace_, meta->name), rv->value());
  }
  return list;
}

}  // namespace cache::protobuf
