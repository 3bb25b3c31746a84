#include <doctest/doctest.h>

#include "upstream_json.h"
#include "cache/object_meta_parser.h"
#include "watch/reflector/watch_event_decoder.h"

#include "cache/protobuf/protobuf_list.h"
#include "cache/protobuf/protobuf_object.h"
#include "cache/status.h"
#include "watch/reflector/list_page_decoder.h"

using namespace watch;
using namespace watch::testing;

TEST_CASE("Decoder keeps the object's bytes exactly as upstream sent them (W2, W3)") {
  WatchEventDecoder decoder;
  const std::string object = pod("web-0", 12345);
  auto result = decoder.decode(event("MODIFIED", object));
  REQUIRE(result.event);
  CHECK(result.event->type == EventType::Modified);
  CHECK(result.event->object == object);
  CHECK(result.event->resource_version == 12345);
  CHECK_FALSE(result.event->initial_events_end);
}

TEST_CASE("Decoder accepts the object before the type and whitespace around tokens") {
  WatchEventDecoder decoder;
  auto result = decoder.decode(R"( { "object" : {"metadata":{"resourceVersion":"7"}} , "type" : "DELETED" } )");
  REQUIRE(result.event);
  CHECK(result.event->type == EventType::Deleted);
  CHECK(result.event->object == R"({"metadata":{"resourceVersion":"7"}})");
  CHECK(result.event->resource_version == 7);
}

TEST_CASE("Decoder reads only the object's own metadata, not nested template metadata") {
  WatchEventDecoder decoder;
  const std::string object =
      R"({"kind":"Deployment","spec":{"template":{"metadata":{"resourceVersion":"1","annotations":{"k8s.io/initial-events-end":"true"}}}},"metadata":{"name":"d","resourceVersion":"900"}})";
  auto result = decoder.decode(event("ADDED", object));
  REQUIRE(result.event);
  CHECK(result.event->resource_version == 900);
  CHECK_FALSE(result.event->initial_events_end);
  CHECK(result.event->object == object);
}

TEST_CASE("Decoder recognises the initial-events-end bookmark (W9)") {
  WatchEventDecoder decoder;
  auto end = decoder.decode(bookmark(12500, true));
  REQUIRE(end.event);
  CHECK(end.event->type == EventType::Bookmark);
  CHECK(end.event->resource_version == 12500);
  CHECK(end.event->initial_events_end);

  auto plain = decoder.decode(bookmark(12746));
  REQUIRE(plain.event);
  CHECK_FALSE(plain.event->initial_events_end);
}

TEST_CASE("Decoder reads code, reason and message of an ERROR event (W5)") {
  WatchEventDecoder decoder;
  auto result = decoder.decode(expiredEvent());
  REQUIRE(result.event);
  CHECK(result.event->type == EventType::Error);
  CHECK(result.event->status_code == 410);
  CHECK(result.event->status_reason == "Expired");
  CHECK(result.event->status_message == "too old resource version: 5 (11874)");
  CHECK(result.event->resource_version == 0);
}

TEST_CASE("Decoder rejects malformed lines with a reason") {
  WatchEventDecoder decoder;
  const char* bad[] = {
      "not json",
      "[]",
      R"({"type":"ADDED"})",
      R"({"object":{"metadata":{"resourceVersion":"1"}}})",
      R"({"type":"ADDED","object":{"metadata":{}}})",
      R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"abc"}}})",
      R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"-1"}}})",
      R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"99999999999999999999999"}}})",
      R"({"type":"RENAMED","object":{"metadata":{"resourceVersion":"1"}}})",
      R"({"type":"ADDED","object":"x"})",
      R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1"})",
  };
  for (const char* line : bad) {
    CAPTURE(line);
    auto result = decoder.decode(line);
    CHECK_FALSE(result.event);
    CHECK_FALSE(result.error.empty());
  }
  // The decoder is reusable after a failure.
  CHECK(decoder.decode(event("ADDED", pod("a", 3))).event);
}

TEST_CASE("resourceVersion parsing is decimal uint64 only (R1)") {
  CHECK(cache::parseObjectResourceVersion("0") == 0u);
  CHECK(cache::parseObjectResourceVersion("18446744073709551615") == UINT64_MAX);
  CHECK_FALSE(cache::parseObjectResourceVersion("18446744073709551616"));
  CHECK_FALSE(cache::parseObjectResourceVersion(""));
  CHECK_FALSE(cache::parseObjectResourceVersion("+1"));
  CHECK_FALSE(cache::parseObjectResourceVersion("1.5"));
}

namespace {

std::string pbField(char tag, std::string_view bytes) {
  return std::string(1, tag) + static_cast<char>(bytes.size()) + std::string(bytes);
}

// The payload of one protobuf watch frame around `object` (a bare message) of kind Pod.
std::string protobufEvent(std::string_view type, std::string_view object, std::string_view kind = "Pod") {
  std::string enveloped;
  cache::protobuf::appendEnvelope(enveloped, "v1", kind, object);
  std::string frame;
  cache::protobuf::appendWatchFrame(frame, type, enveloped);
  return frame.substr(4);
}

}  // namespace

TEST_CASE("W2: protobuf watch events decode to the same events as JSON lines") {
  WatchEventDecoder decoder(cache::Encoding::Protobuf);
  const std::string pod = pbField('\x0a', pbField('\x0a', "a") + pbField('\x32', "41"));
  auto added = decoder.decode(protobufEvent("ADDED", pod));
  REQUIRE(added.event);
  CHECK(added.event->type == EventType::Added);
  CHECK(added.event->resource_version == 41);
  CHECK(added.event->object == pod);  // the bare message, as the store keeps it

  // W9: the initial-events-end bookmark's annotation (ObjectMeta field 12, a map entry).
  const std::string bookmark =
      pbField('\x0a', pbField('\x32', "57") + pbField('\x62', pbField('\x0a', "k8s.io/initial-events-end") +
                                                                 pbField('\x12', "true")));
  auto end = decoder.decode(protobufEvent("BOOKMARK", bookmark));
  REQUIRE(end.event);
  CHECK(end.event->type == EventType::Bookmark);
  CHECK(end.event->resource_version == 57);
  CHECK(end.event->initial_events_end);

  // W5: an ERROR event carries a protobuf Status.
  cache::Status gone{cache::Reason::Expired, "too old resource version: 1 (50)"};
  const std::string status_body = cache::statusProtobuf(gone);  // the views below point into it
  const auto status = cache::protobuf::parseEnvelope(status_body);
  REQUIRE(status);
  auto error = decoder.decode(protobufEvent("ERROR", status->raw, "Status"));
  REQUIRE(error.event);
  CHECK(error.event->type == EventType::Error);
  CHECK(error.event->status_code == 410);
  CHECK(error.event->status_reason == "Expired");
  CHECK(error.event->status_message == "too old resource version: 1 (50)");

  CHECK_FALSE(decoder.decode("\x0a\x05" "ADD").event);
  CHECK_FALSE(decoder.decode(protobufEvent("ADDED", pbField('\x0a', pbField('\x32', "x1")))).event);
}

TEST_CASE("N2: a protobuf list page gives each item's message, the RV and the continue token") {
  const std::string a = pbField('\x0a', pbField('\x0a', "a") + pbField('\x32', "3"));
  const std::string b = pbField('\x0a', pbField('\x0a', "b") + pbField('\x32', "4"));
  std::string body;
  cache::protobuf::appendList(body, "v1", "PodList", {"", "99", "next", std::nullopt}, {a, b});
  const ListPageResult result = decodeProtobufListPage(body);
  REQUIRE(result.page);
  CHECK(result.page->resource_version == 99);
  CHECK(result.page->continue_token == "next");
  REQUIRE(result.page->items.size() == 2);
  CHECK(result.page->items[0] == a);
  CHECK(result.page->items[1] == b);
  CHECK_FALSE(decodeProtobufListPage(body.substr(0, body.size() - 9)).page);
  CHECK_FALSE(decodeProtobufListPage("{\"kind\":\"PodList\"}").page);
}
