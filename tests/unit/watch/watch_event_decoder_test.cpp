#include <doctest/doctest.h>

#include "upstream_json.h"
#include "cache/object_meta_parser.h"
#include "watch/watch_event_decoder.h"

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
