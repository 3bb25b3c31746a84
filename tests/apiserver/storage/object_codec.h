#pragma once
// Turns request bodies into stored objects and back: key order as the apiserver
// serializes (Go struct order for built-in types, sorted map keys for custom
// resources), generated metadata (uid, creationTimestamp), and list-item views (L1).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "tests/apiserver/storage/resource_catalog.h"
#include "tests/apiserver/semantics.h"

namespace testapi {

// One immutable stored version of an object. `json` is the full object with
// kind/apiVersion; for built-in types they come first so the list-item form
// (without them, L1) is "{" + json.substr(item_offset).
struct StoredObject {
  std::string json;
  size_t item_offset = 0;
  std::string ns;
  std::string name;
  std::string key;  // "ns/name" or "name": the storage key, bytewise ordered (P9)
  std::string uid;
  uint64_t rv = 0;
  Labels labels;
  Fields fields;

  // Appends the L1 list-item form to `out`.
  void appendItem(std::string& out) const;
};
using StoredObjectPtr = std::shared_ptr<const StoredObject>;

std::string storageKey(std::string_view ns, std::string_view name);
std::string nowRfc3339();
std::string newUid();

// Serializes `obj` in apiserver key order for `res`: Go struct order for a built-in
// type; for a custom resource an unstructured map as encoding/json writes it (keys
// sorted at every level, Go string escaping and number forms, appendUnstructuredJson).
std::string canonicalJson(const ServedResource& res, const rapidjson::Value& obj);
std::string toJson(const rapidjson::Value& v);

// Builds the stored form of `obj` (metadata must already hold name, namespace and
// resourceVersion).
StoredObjectPtr makeStored(const ServedResource& res, const rapidjson::Value& obj);

// Parses a stored object's JSON into `doc` (never fails: stored JSON is valid).
void parseStored(const StoredObject& obj, rapidjson::Document& doc);

// A copy of `obj` whose metadata.resourceVersion is `rv`, e.g. the last state of a
// deleted object carrying the deletion RV (W3).
StoredObjectPtr withResourceVersion(const ServedResource& res, const StoredObject& obj, uint64_t rv);

// Small RapidJSON helpers.
const rapidjson::Value* member(const rapidjson::Value& v, const char* name);
std::string stringMember(const rapidjson::Value& v, const char* name);
rapidjson::Value& ensureObject(rapidjson::Value& parent, const char* name, rapidjson::Document::AllocatorType& a);
void setString(rapidjson::Value& obj, const char* name, std::string_view value,
               rapidjson::Document::AllocatorType& a);
// Escapes `s` as a JSON string literal including the quotes.
std::string jsonQuote(std::string_view s);

}  // namespace testapi
