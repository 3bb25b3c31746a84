#pragma once
// Small pods for store tests, built through the real parser.

#include <map>
#include <memory>
#include <string>

#include "cache/object_meta_parser.h"

namespace cache::testing {

inline std::shared_ptr<const FieldSpec> podFields() {
  auto spec = std::make_shared<FieldSpec>();
  spec->fields = {{"spec.nodeName", {"spec", "nodeName"}}, {"status.phase", {"status", "phase"}}};
  return spec;
}

inline ObjectConstSharedPtr makePod(const std::string& ns, const std::string& name, uint64_t rv,
                                    const std::map<std::string, std::string>& labels = {},
                                    const std::string& node = "") {
  static thread_local ObjectMetaParser parser(ParserOptions{.field_spec = podFields()});
  std::string json = R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name + R"(","namespace":")" + ns +
                     R"(","resourceVersion":")" + std::to_string(rv) + R"(","labels":{)";
  bool first = true;
  for (const auto& [k, v] : labels) {
    json += (first ? "" : ",") + ("\"" + k + "\":\"" + v + "\"");
    first = false;
  }
  json += R"(}},"spec":{"nodeName":")" + node + R"("}})";
  auto object = parser.parseObject(json);
  if (!object) std::abort();
  return *object;
}

// Copies of an object's bytes, uid and stored metadata: a packed object (issue #37) is
// unpacked into a buffer of the caller's, never into the instance.
inline std::string bytesOf(const Object& object) {
  std::string buffer;
  return std::string(object.bytes(buffer));
}
inline std::string uidOf(const Object& object) {
  std::string buffer;
  return std::string(object.uid(buffer));
}
inline std::string metadataOf(const Object& object) {
  std::string buffer;
  return std::string(object.metadataBytes(buffer));
}

}  // namespace cache::testing
