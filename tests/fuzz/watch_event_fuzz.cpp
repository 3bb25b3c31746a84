// One upstream watch line, {"type":"...","object":{...}}, through both readers: the
// store's ObjectMetaParser and the reflector's WatchEventDecoder. Neither may crash;
// what each accepts is consistent (RV of the object or bookmark, ERROR's Status), and
// when both accept a line that is valid JSON they agree on its type and resourceVersion.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <simdjson.h>

#include "fuzz_check.h"
#include "object_checks.h"
#include "watch/reflector/watch_event_decoder.h"

namespace {

watch::EventType toWatch(cache::EventType type) {
  switch (type) {
    case cache::EventType::Added: return watch::EventType::Added;
    case cache::EventType::Modified: return watch::EventType::Modified;
    case cache::EventType::Deleted: return watch::EventType::Deleted;
    case cache::EventType::Bookmark: return watch::EventType::Bookmark;
    case cache::EventType::Error: return watch::EventType::Error;
  }
  return watch::EventType::Error;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static cache::ObjectMetaParser parser(fuzz::podOptions());
  static watch::WatchEventDecoder decoder;

  auto event = parser.parseWatchEvent(input);
  if (event) {
    switch (event->type) {
      case cache::EventType::Added:
      case cache::EventType::Modified:
      case cache::EventType::Deleted:
        FUZZ_CHECK(event->object != nullptr);
        FUZZ_CHECK(event->resource_version == event->object->resourceVersion());
        fuzz::checkObject(parser, *event->object, input);
        break;
      case cache::EventType::Bookmark:
        FUZZ_CHECK(event->object == nullptr);
        break;
      case cache::EventType::Error:
        FUZZ_CHECK(event->object == nullptr && event->resource_version == 0);
        FUZZ_CHECK(input.find(event->error_status) != std::string_view::npos);
        break;
    }
  } else {
    FUZZ_CHECK(!event.error().message.empty());
  }

  const watch::DecodeResult decoded = decoder.decode(input);
  if (!decoded.event) {
    FUZZ_CHECK(!decoded.error.empty());
    return 0;
  }
  FUZZ_CHECK(decoded.error.empty());
  const watch::WatchEvent& e = *decoded.event;
  FUZZ_CHECK(e.object.starts_with('{') && e.object.ends_with('}'));
  FUZZ_CHECK(input.find(e.object) != std::string_view::npos);
  if (input.find('\\') == std::string_view::npos) {
    FUZZ_CHECK(input.find(e.status_reason) != std::string_view::npos);
    FUZZ_CHECK(input.find(e.status_message) != std::string_view::npos);
  }
  // On-demand parsing does not validate what it skips, so on malformed JSON the two
  // readers may each see a different resourceVersion; upstream sends valid JSON.
  static simdjson::dom::parser validator;
  const bool valid_json = !validator.parse(simdjson::padded_string(input)).error();
  if (event && valid_json && input.find('\\') == std::string_view::npos) {
    FUZZ_CHECK(toWatch(event->type) == e.type);
    if (e.type != watch::EventType::Error) FUZZ_CHECK(event->resource_version == e.resource_version);
  }
  return 0;
}
