#pragma once
// ObjectParser: what the store side of a reflector needs from one encoding's parser:
// objects (list items, watch-list initial events) and whole watch events, each parsed
// once into a cache::Object that owns its bytes. ObjectMetaParser reads JSON,
// ProtobufObjectParser the apiserver's protobuf (cache/encoding.h).
//
// One parser per reflector thread: implementations reuse scratch state and are not
// thread-safe. Bad input is an error Result, never a crash.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cache/encoding.h"
#include "cache/event_type.h"
#include "cache/object.h"
#include "cache/result.h"

namespace cache {

struct ParsedWatchEvent {
  EventType type = EventType::Error;
  // Set for ADDED/MODIFIED/DELETED.
  ObjectConstSharedPtr object;
  // The object's RV, or the bookmark's RV; 0 for ERROR.
  uint64_t resource_version = 0;
  // For ERROR: the raw Status object.
  std::string error_status;
};

class ObjectParser {
 public:
  virtual ~ObjectParser() = default;

  virtual Encoding encoding() const = 0;
  // One object as the upstream sent it: JSON, or a protobuf object's bare message.
  virtual Result<ObjectConstSharedPtr> parseObject(std::string_view bytes) = 0;
  // One watch event as the upstream frames it: a JSON line, or a protobuf WatchEvent
  // message (a frame's payload, W2).
  virtual Result<ParsedWatchEvent> parseWatchEvent(std::string_view event) = 0;
  // From the first bytes alone: the type of an ADDED, MODIFIED or DELETED event, written
  // the way the apiserver writes them (type first); nullopt for anything else, which the
  // reflector's own decoder then reads.
  virtual std::optional<EventType> objectEventType(std::string_view event) const = 0;
};

}  // namespace cache
