#pragma once
// Watch frames as they go on the wire (W2, W3, W7): one JSON WatchEvent per line,
// `{"type":"MODIFIED","object":<raw object bytes>}\n`. A frame is built once per event and
// shared by every watcher that sends it (the apiserver's cachingObject idea), so it is an
// immutable shared string.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cache/event_type.h"
#include "watch/api_resource.h"

namespace watch {

using FrameConstSharedPtr = std::shared_ptr<const std::string>;

// `{"type":"<T>","object":<object_json>}\n`; the object bytes are copied verbatim.
std::string encodeEvent(cache::EventType type, std::string_view object_json);
FrameConstSharedPtr encodeSharedEvent(cache::EventType type, std::string_view object_json);
// An ERROR event carrying `status_json` (a metav1.Status; a trailing newline is dropped).
std::string encodeErrorEvent(std::string_view status_json);

// Builds BOOKMARK frames for one resource (W7, W9): an empty object of the watched type
// with only metadata.resourceVersion (and the initial-events-end annotation) set, shaped
// as the apiserver serializes that type's empty struct.
class BookmarkEncoder {
 public:
  explicit BookmarkEncoder(const ApiResource& resource);
  std::string frame(uint64_t rv, bool initial_events_end = false) const;

 private:
  std::string prefix_;  // up to and including `"metadata":`
  std::string tail_;    // members after metadata, with the leading comma, then `}`
};

// The members a built-in type's empty Go struct serializes after metadata (encoding/json
// writes non-omitempty struct fields of a zero value), or "" when it writes none.
// Unknown built-ins get "" (their kind and apiVersion, which clients check, stay right).
std::string_view emptyObjectTail(std::string_view group, std::string_view kind);

}  // namespace watch
