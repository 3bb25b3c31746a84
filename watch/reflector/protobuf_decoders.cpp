// The reflector's decoders for a resource watched and listed in protobuf (contract N2,
// W2): what decodeListPage and WatchEventDecoder read from JSON, read from the
// apiserver's List and WatchEvent messages through cache/protobuf_*.h.
#include <string>
#include <utility>

#include "cache/object_meta_parser.h"
#include "cache/protobuf/protobuf_list.h"
#include "cache/protobuf/protobuf_object.h"
#include "watch/reflector/list_page_decoder.h"
#include "watch/reflector/watch_event_decoder.h"

namespace watch {
namespace {

constexpr std::string_view kInitialEventsEndAnnotation = "k8s.io/initial-events-end";

}  // namespace

DecodeResult decodeProtobufWatchEvent(std::string_view message) {
  DecodeResult result;
  auto fail = [&result](std::string why) {
    result.error = std::move(why);
    return result;
  };
  const auto view = cache::protobuf::parseWatchEvent(message);
  if (!view) return fail("malformed protobuf watch event");
  const auto type = cache::parseEventType(view->type);
  if (!type) return fail("unknown event type " + std::string(view->type));
  WatchEvent event;
  event.type = *type;
  const auto envelope = cache::protobuf::parseEnvelope(view->object);
  if (!envelope) return fail("malformed protobuf event object");
  if (event.type == EventType::Error) {
    const auto status = cache::protobuf::parseStatus(envelope->raw);
    if (!status) return fail("malformed protobuf Status in an ERROR event");
    event.status_code = status->code;
    event.status_reason = status->reason;
    event.status_message = status->message;
    result.event = std::move(event);
    return result;
  }
  const auto meta = cache::protobuf::parseObjectMeta(envelope->raw);
  if (!meta) return fail("malformed protobuf object metadata");
  const auto rv = cache::parseObjectResourceVersion(meta->resource_version);
  if (!rv) return fail("metadata.resourceVersion is not a decimal number: " + std::string(meta->resource_version));
  event.resource_version = *rv;
  for (const auto& [name, value] : meta->annotations) {
    if (name == kInitialEventsEndAnnotation) event.initial_events_end = value == "true";
  }
  // A bookmark's object too: the cache's protobuf bookmarks are shaped like it.
  event.object.assign(envelope->raw);
  result.event = std::move(event);
  return result;
}

ListPageResult decodeProtobufListPage(std::string_view body) {
  ListPageResult result;
  const auto list = cache::protobuf::parseList(body);
  if (!list) {
    result.error = "malformed protobuf list";
    return result;
  }
  const auto rv = cache::parseObjectResourceVersion(list->metadata.resource_version);
  if (!rv) {
    result.error = "list resourceVersion is not a decimal number: " + std::string(list->metadata.resource_version);
    return result;
  }
  ListPage page;
  page.resource_version = *rv;
  page.continue_token.assign(list->metadata.continue_token);
  if (list->metadata.remaining_item_count && *list->metadata.remaining_item_count >= 0) {
    page.remaining_item_count = uint64_t(*list->metadata.remaining_item_count);
  }
  page.items.reserve(list->items.size());
  for (std::string_view item : list->items) page.items.emplace_back(item);
  result.page = std::move(page);
  return result;
}

}  // namespace watch
