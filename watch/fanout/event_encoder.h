#pragma once
// Watch frames as they go on the wire (W2, W3, W7): one JSON WatchEvent per line,
// `{"type":"MODIFIED","object":<raw object bytes>}\n`. A frame is built once per event and
// shared by every watcher that sends it (the apiserver's cachingObject idea): a Frame.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cache/encoding.h"
#include "cache/event_type.h"
#include "cache/object.h"
#include "cache/status.h"
#include "watch/api_resource.h"
#include "watch/fanout/frame.h"

namespace watch {

// `{"type":"<T>","object":<object_json>}\n`; the object bytes are copied verbatim.
std::string encodeEvent(cache::EventType type, std::string_view object_json);
FrameConstSharedPtr encodeSharedEvent(cache::EventType type, std::string_view object_json);
// An ERROR event carrying `status_json` (a metav1.Status; a trailing newline is dropped).
std::string encodeErrorEvent(std::string_view status_json);

// How one resource's events go on the wire (W2): JSON lines, or (a protobuf cache) each
// event a length-prefixed WatchEvent message whose object is the stored message in its
// `k8s\0` envelope (cache/protobuf/protobuf_list.h).
class FrameEncoder {
 public:
  FrameEncoder() = default;  // JSON
  FrameEncoder(const ApiResource& resource, cache::Encoding encoding);

  cache::Encoding encoding() const { return encoding_; }
  // The watch response's Content-Type.
  std::string_view contentType() const;
  // `metadata_only` (protobuf only): the object as a PartialObjectMetadata of its stored
  // ObjectMeta bytes (N4), as the apiserver streams a metadata informer's watch.
  std::string event(cache::EventType type, const cache::Object& object, bool metadata_only = false) const;
  FrameConstSharedPtr sharedEvent(cache::EventType type, const cache::Object& object,
                                  bool metadata_only = false) const;
  // An ERROR event carrying `status` (W5).
  std::string error(const cache::Status& status) const;
  // A BOOKMARK around an object already built (BookmarkEncoder).
  std::string bookmark(std::string_view object, bool metadata_only = false) const;

 private:
  cache::Encoding encoding_ = cache::Encoding::Json;
  std::string api_version_;
  std::string kind_;
};

// Builds BOOKMARK frames for one resource (W7, W9): an empty object of the watched type
// with only metadata.resourceVersion (and the initial-events-end annotation) set, shaped
// as the apiserver serializes that type's empty struct. In protobuf that shape is the
// type's whole empty message, which only the type's schema knows: it is taken from a
// bookmark the upstream sent (`protobuf_sample`, WatchDispatcher::bookmarkSample), and
// without one no bookmark can be written (valid() false).
class BookmarkEncoder {
 public:
  explicit BookmarkEncoder(const ApiResource& resource, cache::Encoding encoding = cache::Encoding::Json,
                           std::shared_ptr<const std::string> protobuf_sample = nullptr, bool metadata_only = false);
  bool valid() const { return encoder_.encoding() == cache::Encoding::Json || sample_ != nullptr; }
  std::string frame(uint64_t rv, bool initial_events_end = false) const;

 private:
  FrameEncoder encoder_;
  std::shared_ptr<const std::string> sample_;  // protobuf: an upstream bookmark's object
  bool metadata_only_ = false;
  std::string prefix_;  // up to and including `"metadata":`
  std::string tail_;    // members after metadata, with the leading comma, then `}`
};

// The members a built-in type's empty Go struct serializes after metadata (encoding/json
// writes non-omitempty struct fields of a zero value), or "" when it writes none.
// Unknown built-ins get "" (their kind and apiVersion, which clients check, stay right).
std::string_view emptyObjectTail(std::string_view group, std::string_view kind);

}  // namespace watch
