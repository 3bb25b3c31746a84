#pragma once
// Small protobuf pods for list tests, built through the real parser.

#include <string>
#include <string_view>

#include "cache/protobuf/protobuf_object_parser.h"

namespace cache::testing {

// A stored protobuf pod in namespace "web": ObjectMeta {name, namespace,
// resourceVersion} and a PodSpec {nodeName}. Short fields only (one-byte lengths).
inline ObjectConstSharedPtr makeProtobufPod(std::string_view name, std::string_view rv) {
  auto field = [](char tag, std::string_view bytes) {
    return std::string(1, tag) + static_cast<char>(bytes.size()) + std::string(bytes);
  };
  const std::string meta = field('\x0a', name) + field('\x1a', "web") + field('\x32', rv);
  ProtobufObjectParser parser({nullptr, false});
  return *parser.parseObject(field('\x0a', meta) + field('\x12', field('\x52', "node-a")));
}

}  // namespace cache::testing
