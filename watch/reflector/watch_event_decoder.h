#pragma once
// Decodes one JSON watch line (or one protobuf watch frame's WatchEvent), {"type":"<T>","object":{...}}, into the event type, the
// object's raw bytes exactly as upstream sent them, and the few fields the reflector acts
// on. The object itself is not interpreted further: the store parses it once.
//
// One decoder per reflector thread (it reuses its simdjson parser and buffer); not
// thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cache/encoding.h"
#include "cache/event_type.h"

namespace watch {

// The store's event types (W3); cache::wireName gives their wire names.
using cache::EventType;

struct WatchEvent {
  EventType type = EventType::Added;
  // Raw JSON of "object", whitespace-trimmed; in protobuf the object's bare message (the
  // envelope's raw), as the store keeps it.
  std::string object;
  // metadata.resourceVersion parsed as a decimal uint64 (contract R1). 0 when absent,
  // which is only legal for ERROR events.
  uint64_t resource_version = 0;
  // BOOKMARK annotated k8s.io/initial-events-end: "true" (contract W9).
  bool initial_events_end = false;
  // ERROR events carry a Status: its code, reason and message.
  int64_t status_code = 0;
  std::string status_reason;
  std::string status_message;
};

struct DecodeResult {
  std::optional<WatchEvent> event;  // set on success
  std::string error;                // why the line was rejected otherwise
};

// A protobuf WatchEvent message (a frame's payload, W2) decoded the same way.
DecodeResult decodeProtobufWatchEvent(std::string_view message);

class WatchEventDecoder {
 public:
  explicit WatchEventDecoder(cache::Encoding encoding = cache::Encoding::Json);
  ~WatchEventDecoder();
  WatchEventDecoder(const WatchEventDecoder&) = delete;
  WatchEventDecoder& operator=(const WatchEventDecoder&) = delete;

  DecodeResult decode(std::string_view line);

 private:
  struct Impl;
  cache::Encoding encoding_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace watch
