#pragma once
// Watch event types as they appear on the wire (W3).

#include <optional>
#include <string_view>

namespace cache {

enum class EventType { Added, Modified, Deleted, Bookmark, Error };

constexpr std::string_view wireName(EventType type) {
  switch (type) {
    case EventType::Added: return "ADDED";
    case EventType::Modified: return "MODIFIED";
    case EventType::Deleted: return "DELETED";
    case EventType::Bookmark: return "BOOKMARK";
    case EventType::Error: return "ERROR";
  }
  return "ERROR";
}

constexpr std::optional<EventType> parseEventType(std::string_view text) {
  for (EventType t : {EventType::Added, EventType::Modified, EventType::Deleted, EventType::Bookmark, EventType::Error}) {
    if (wireName(t) == text) return t;
  }
  return std::nullopt;
}

}  // namespace cache
