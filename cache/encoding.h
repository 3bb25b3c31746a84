#pragma once
// The two encodings the apiserver serves built-in objects in (contract N1, N2). A cache
// holds one of them, exactly as the upstream sent it: without the types' schemas the
// proxy cannot turn one into the other, so a resource read in both has one informer per
// encoding (docs/design.md, "one informer per encoding").

#include <cstdint>
#include <string_view>

namespace cache {

enum class Encoding : uint8_t {
  Json,
  Protobuf,  // application/vnd.kubernetes.protobuf; objects stored as their bare message
};

inline std::string_view encodingName(Encoding encoding) {
  return encoding == Encoding::Protobuf ? "protobuf" : "json";
}

}  // namespace cache
