#pragma once
// Reading Kubernetes' protobuf encoding at the wire level, without generated schemas
// (contract N2, W2): the `k8s\0` envelope around a runtime.Unknown, and the ObjectMeta of
// a top-level object, which is field 1 of every built-in type (its field numbers come
// from k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto). Every view points into the
// bytes passed in: an object stored as the upstream sent it is read in place, never
// re-encoded. The tag and varint decoding is libprotobuf-lite's CodedInputStream.
//
// Malformed input (truncated, a length past the end, a wire type that cannot hold the
// field) gives nullopt, never a crash: these parse upstream bytes (fuzzed in
// tests/fuzz/protobuf_object_fuzz.cpp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cache::protobuf {

// The four bytes before every protobuf-encoded object, list and watch event.
inline constexpr std::string_view kMagic{"k8s\0", 4};

// runtime.Unknown {typeMeta{apiVersion, kind}, raw, contentEncoding, contentType}.
struct Envelope {
  std::string_view api_version;
  std::string_view kind;
  std::string_view raw;  // the encoded object: the message of `kind`
  std::string_view content_encoding;
  std::string_view content_type;
};

// `bytes` is magic + Unknown. nullopt: no magic, or not a well-formed Unknown.
std::optional<Envelope> parseEnvelope(std::string_view bytes);

// A span of bytes inside the message it was read from.
struct Span {
  size_t offset = 0;
  size_t length = 0;
};

// What the store needs of an object's metadata.
struct ObjectMetaView {
  std::string_view name;
  std::string_view generate_name;
  std::string_view namespace_;
  std::string_view uid;
  std::string_view resource_version;
  int64_t generation = 0;
  int64_t creation_timestamp_seconds = 0;
  bool has_deletion_timestamp = false;
  // Map entries in wire order (Go writes them sorted by key).
  std::vector<std::pair<std::string_view, std::string_view>> labels;
  std::vector<std::pair<std::string_view, std::string_view>> annotations;
  // Where the ObjectMeta message (field 1's value) lies in the object, and the
  // resourceVersion's value inside the object (length 0 when absent), so that a later
  // writer can splice a new RV or drop managedFields without decoding the rest.
  Span metadata;
  Span resource_version_value;
};

// metav1.Status {3: message, 4: reason, 6: code}: what a client acts on.
struct StatusView {
  int64_t code = 0;
  std::string_view reason;
  std::string_view message;
};
// `message` is an Envelope's raw of kind Status. nullopt when malformed.
std::optional<StatusView> parseStatus(std::string_view message);

// The object of a BOOKMARK (W7, W9) made from `sample`, the object of a bookmark the
// upstream sent for the same type: its ObjectMeta keeps every field but the
// resourceVersion (now `rv`) and the annotations (now only k8s.io/initial-events-end:
// "true" when `initial_events_end`), fields in number order as the apiserver writes them;
// the rest of the message (the type's empty fields) as in the sample. nullopt when
// `sample` is not a well-formed object.
std::optional<std::string> bookmarkObject(std::string_view sample, uint64_t rv, bool initial_events_end);

// `object` is the message of a top-level type (an Envelope's raw). nullopt when it is not
// well-formed or its field 1 is not a well-formed ObjectMeta. An object without field 1
// gives an empty view.
std::optional<ObjectMetaView> parseObjectMeta(std::string_view object);

}  // namespace cache::protobuf
