#include "cache/metadata_list.h"

#include <string>

#include <simdjson.h>

#include "cache/object.h"
#include "cache/resource_version.h"

namespace cache {
namespace {

Unexpected bad(std::string message) { return fail(Reason::BadRequest, std::move(message)); }

}  // namespace

Result<MetadataList> parseMetadataList(std::string_view body) {
  simdjson::padded_string padded(body);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS) return bad("not JSON");
  MetadataList list;
  simdjson::ondemand::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) return bad("not an object");
  bool saw_metadata = false;
  bool saw_items = false;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return bad("bad key");
    if (key == "metadata") {
      simdjson::ondemand::object meta;
      if (field.value().get_object().get(meta) != simdjson::SUCCESS) return bad("metadata is not an object");
      for (auto m : meta) {
        std::string_view mkey;
        if (m.unescaped_key().get(mkey) != simdjson::SUCCESS) return bad("bad key");
        std::string_view text;
        if (mkey == "resourceVersion") {
          if (m.value().get_string().get(text) != simdjson::SUCCESS) return bad("resourceVersion is not a string");
          const auto rv = ResourceVersion::parse(text);
          if (!rv || rv->isZero()) return bad("list resourceVersion is not a revision");
          list.resource_version = rv->value();
        } else if (mkey == "continue") {
          if (m.value().get_string().get(text) != simdjson::SUCCESS) return bad("continue is not a string");
          list.has_continue = !text.empty();
        }
      }
      saw_metadata = true;
    } else if (key == "items") {
      simdjson::ondemand::value items_value;
      if (field.value().get(items_value) != simdjson::SUCCESS) return bad("bad items");
      bool null_items = false;
      if (items_value.is_null().get(null_items) != simdjson::SUCCESS) return bad("bad items");
      if (null_items) {  // the apiserver writes an empty PartialObjectMetadataList's items as null
        saw_items = true;
        continue;
      }
      simdjson::ondemand::array items;
      if (items_value.get_array().get(items) != simdjson::SUCCESS) return bad("items is not an array");
      for (auto item : items) {
        simdjson::ondemand::object object;
        if (item.get_object().get(object) != simdjson::SUCCESS) return bad("item is not an object");
        simdjson::ondemand::object meta;
        if (object["metadata"].get_object().get(meta) != simdjson::SUCCESS) return bad("item without metadata");
        std::string namespace_name, name;
        uint64_t rv = 0;
        for (auto m : meta) {
          std::string_view mkey;
          if (m.unescaped_key().get(mkey) != simdjson::SUCCESS) return bad("bad key");
          std::string_view text;
          if (mkey == "name" || mkey == "namespace" || mkey == "resourceVersion") {
            if (m.value().get_string().get(text) != simdjson::SUCCESS) return bad("metadata field is not a string");
            if (mkey == "name") {
              name = text;
            } else if (mkey == "namespace") {
              namespace_name = text;
            } else {
              const auto parsed = ResourceVersion::parse(text);
              if (!parsed || parsed->isZero()) return bad("item resourceVersion is not a revision");
              rv = parsed->value();
            }
          }
        }
        if (name.empty() || rv == 0) return bad("item without name or resourceVersion");
        list.items.emplace_back(makeKey(namespace_name, name), rv);
      }
      saw_items = true;
    }
  }
  if (!saw_metadata || list.resource_version == 0) return bad("list without resourceVersion");
  if (!saw_items) return bad("list without items");
  return list;
}

bool sameObjects(const Snapshot& snapshot, std::string_view ns, const MetadataList& upstream,
                 const ShardSelector* shard) {
  std::string buffer;  // a packed object's bytes up to its uid
  for (const auto& [key, rv] : upstream.items) {
    const ObjectConstSharedPtr object = snapshot.get(key);
    if (!object || object->resourceVersion() != rv) return false;
    if (!ns.empty() && object->meta().namespace_name != ns) return false;
    if (shard && !shard->matches(object->uid(buffer), object->meta().namespace_name)) return false;
  }
  // Every upstream key is here at the same RV; equal counts leave no room for an extra
  // object (keys are unique on both sides).
  return objectsInScope(snapshot, ns, shard) == upstream.items.size();
}

size_t objectsInScope(const Snapshot& snapshot, std::string_view ns, const ShardSelector* shard) {
  if (ns.empty() && !shard) return snapshot.size();
  ListRequest scope;
  scope.namespace_name = ns;
  if (shard) {
    scope.predicate = [shard](const Object& object) {
      thread_local std::string buffer;  // a packed object's bytes up to its uid
      return shard->matches(object.uid(buffer), object.meta().namespace_name);
    };
  }
  return snapshot.list(scope).items.size();
}

}  // namespace cache
