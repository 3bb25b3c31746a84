// The store's protobuf parser (cache/protobuf/protobuf_object_parser.h, contract N2, W2, S4): objects
// kept as the bare message the upstream sent, ObjectMeta and the selectable fields read by
// field number, the RV spliced with the lengths around it, managedFields dropped on request.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cache/protobuf/protobuf_list.h"
#include "cache/protobuf/protobuf_object.h"
#include "cache/protobuf/protobuf_object_parser.h"
#include "cache/selectors/selectable_fields.h"
#include "cache/status.h"
#include "tests/unit/cache/test_objects.h"

namespace {

using namespace cache;

// A protobuf writer small enough to check by eye: tag, length, bytes.
std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
std::string bytesField(uint32_t number, std::string_view bytes) {
  return varint((number << 3) | 2) + varint(bytes.size()) + std::string(bytes);
}
std::string varintField(uint32_t number, uint64_t value) { return varint(number << 3) + varint(value); }
std::string entry(std::string_view key, std::string_view value) { return bytesField(1, key) + bytesField(2, value); }

std::string objectMeta(std::string_view name, std::string_view ns, std::string_view rv, std::string extra = {}) {
  return bytesField(1, name) + bytesField(2, "") + bytesField(3, ns) + bytesField(4, "") +
         bytesField(5, "0d5e2c1a-uid") + bytesField(6, rv) + varintField(7, 3) + extra;
}

std::string pod(std::string_view name, std::string_view rv, std::string spec = {}, std::string status = {},
                std::string meta_extra = {}) {
  return bytesField(1, objectMeta(name, "web", rv, std::move(meta_extra))) + bytesField(2, spec) +
         bytesField(3, status);
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// `object` with metadata.resourceVersion set to `rv` (the fixtures' RVs are not numbers).
std::string withResourceVersion(std::string_view object, std::string_view rv) {
  const auto view = protobuf::parseObjectMeta(object);
  REQUIRE(view);
  REQUIRE(view->resource_version_value.length > 0);
  const std::string_view metadata = object.substr(view->metadata.offset, view->metadata.length);
  const size_t rv_at = view->resource_version_value.offset - view->metadata.offset;
  std::string new_metadata = std::string(metadata.substr(0, rv_at - 1)) + varint(rv.size()) + std::string(rv) +
                             std::string(metadata.substr(rv_at + view->resource_version_value.length));
  const size_t tag = view->metadata.offset - varint(metadata.size()).size() - 1;
  return std::string(object.substr(0, tag)) + bytesField(1, new_metadata) +
         std::string(object.substr(view->metadata.offset + view->metadata.length));
}

ProtobufObjectParser podParser(bool strip = false) {
  return ProtobufObjectParser({FieldSpec::forBuiltin("", "v1", "pods", true), strip});
}

std::string field(const Object& object, std::string_view name) {
  return std::string(lookup(object.meta().fields, name).value_or(""));
}

}  // namespace

TEST_CASE("N2: every committed fixture parses into a stored object read in place") {
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(KCP_PROTOBUF_FIXTURES_DIR)) {
    if (entry.path().extension() != ".pb") continue;
    const std::string file = readFile(entry.path());
    const auto envelope = protobuf::parseEnvelope(file);
    REQUIRE(envelope);
    const std::string raw = withResourceVersion(envelope->raw, "4242");
    ProtobufObjectParser parser({nullptr, false});
    auto parsed = parser.parseObject(raw);
    REQUIRE_MESSAGE(parsed, entry.path().filename().string());
    const Object& object = **parsed;
    CHECK(object.encoding() == Encoding::Protobuf);
    CHECK(object.plainBytes() == raw);  // stored exactly as received
    CHECK(object.resourceVersion() == 4242);
    const auto view = protobuf::parseObjectMeta(raw);
    CHECK(object.meta().name == view->name);
    CHECK(object.meta().namespace_name == view->namespace_);
    CHECK(object.meta().generation == view->generation);
    CHECK(object.meta().has_deletion_timestamp == view->has_deletion_timestamp);
    CHECK(testing::uidOf(object) == view->uid);
    for (const auto& [key, value] : view->labels) CHECK(lookup(object.meta().labels, key) == value);
    CHECK(testing::metadataOf(object) == std::string_view(raw).substr(view->metadata.offset, view->metadata.length));
    ++seen;
  }
  CHECK(seen >= 10);
}

TEST_CASE("S4: a protobuf pod's selectable fields are read by field number, rendered as in JSON") {
  const std::string spec = bytesField(3, "Always") + bytesField(8, "builder") + bytesField(10, "node-a") +
                           varintField(11, 1) + bytesField(19, "default-scheduler");
  const std::string status = bytesField(1, "Running") + bytesField(6, "10.0.0.7") + bytesField(11, "");
  const std::string meta_extra = bytesField(11, entry("app", "web")) + bytesField(11, entry("tier", "front"));
  auto parser = podParser();
  auto parsed = parser.parseObject(pod("p-1", "17", spec, status, meta_extra));
  REQUIRE(parsed);
  const Object& object = **parsed;
  CHECK(object.key() == "web/p-1");
  CHECK(object.resourceVersion() == 17);
  CHECK(object.meta().generation == 3);
  CHECK(lookup(object.meta().labels, "app") == "web");
  CHECK(lookup(object.meta().labels, "tier") == "front");
  CHECK(field(object, "spec.nodeName") == "node-a");
  CHECK(field(object, "spec.restartPolicy") == "Always");
  CHECK(field(object, "spec.serviceAccountName") == "builder");
  CHECK(field(object, "spec.schedulerName") == "default-scheduler");
  CHECK(field(object, "spec.hostNetwork") == "true");
  CHECK(field(object, "status.phase") == "Running");
  CHECK(field(object, "status.podIP") == "10.0.0.7");
  // Empty (written by gogo as "") and absent fields have no entry, as in JSON.
  CHECK_FALSE(lookup(object.meta().fields, "status.nominatedNodeName"));
  CHECK_FALSE(lookup(object.meta().fields, "status.podIPs"));

  // false is written on the wire and compares as "false"; JSON leaves it out and the
  // selector compares the zero value "false": the same answer.
  auto off = parser.parseObject(pod("p-2", "18", varintField(11, 0)));
  REQUIRE(off);
  CHECK(field(**off, "spec.hostNetwork") == "false");

  // int32 fields: ReplicationController status.replicas (Int), events' source.component.
  ProtobufObjectParser rc({FieldSpec::forBuiltin("", "v1", "replicationcontrollers", true), false});
  auto rc_object = rc.parseObject(pod("rc", "3", {}, varintField(1, 4)));
  REQUIRE(rc_object);
  CHECK(field(**rc_object, "status.replicas") == "4");
  ProtobufObjectParser events({FieldSpec::forBuiltin("", "v1", "events", true), false});
  const std::string event = bytesField(1, objectMeta("e", "web", "9")) +
                            bytesField(2, bytesField(1, "Pod") + bytesField(3, "p-1")) + bytesField(3, "Scheduled") +
                            bytesField(5, bytesField(1, "default-scheduler")) + bytesField(9, "Normal");
  auto event_object = events.parseObject(event);
  REQUIRE(event_object);
  CHECK(field(**event_object, "involvedObject.kind") == "Pod");
  CHECK(field(**event_object, "involvedObject.name") == "p-1");
  CHECK(field(**event_object, "reason") == "Scheduled");
  CHECK(field(**event_object, "source") == "default-scheduler");
  CHECK(field(**event_object, "type") == "Normal");
}

TEST_CASE("W3: a protobuf object's RV is spliced with the lengths around it") {
  const std::string spec = bytesField(10, "node-a");
  const std::string original = pod("p-1", "5", spec, bytesField(1, "Running"), bytesField(11, entry("app", "web")));
  auto parser = podParser();
  auto parsed = parser.parseObject(original);
  REQUIRE(parsed);
  for (uint64_t rv : {uint64_t{6}, uint64_t{123456789012345}, uint64_t{18446744073709551615u}}) {
    auto spliced = (*parsed)->withResourceVersion(rv);
    CHECK(spliced->resourceVersion() == rv);
    CHECK(spliced->encoding() == Encoding::Protobuf);
    // It reads back as the same object at the new RV, the rest of the bytes unchanged.
    auto again = parser.parseObject(spliced->plainBytes());
    REQUIRE(again);
    CHECK((*again)->resourceVersion() == rv);
    CHECK((*again)->key() == "web/p-1");
    CHECK(field(**again, "spec.nodeName") == "node-a");
    CHECK(spliced->plainBytes() == pod("p-1", std::to_string(rv), spec, bytesField(1, "Running"),
                                  bytesField(11, entry("app", "web"))));
    const ByteRange r = spliced->layout().resource_version_value;
    CHECK(spliced->plainBytes().substr(r.begin, r.size()) == std::to_string(rv));
  }
  // A metadata large enough that its length grows a byte when the RV does.
  const std::string padded = pod("p-2", "7", {}, {}, bytesField(12, entry("note", std::string(100, 'x'))));
  auto small = parser.parseObject(padded);
  REQUIRE(small);
  auto big = (*small)->withResourceVersion(99999999999);
  auto reread = parser.parseObject(big->plainBytes());
  REQUIRE(reread);
  CHECK((*reread)->resourceVersion() == 99999999999);
}

TEST_CASE("strip-managed-fields drops ObjectMeta field 17 and nothing else") {
  const std::string managed = bytesField(17, bytesField(1, "kubectl") + bytesField(2, "Update"));
  const std::string with = pod("p-1", "5", bytesField(10, "n"), {}, managed + managed);
  auto stripped = podParser(true).parseObject(with);
  REQUIRE(stripped);
  CHECK((*stripped)->plainBytes() == pod("p-1", "5", bytesField(10, "n")));
  CHECK((*stripped)->resourceVersion() == 5);
  auto kept = podParser(false).parseObject(with);
  REQUIRE(kept);
  CHECK((*kept)->plainBytes() == with);
}

TEST_CASE("W2: protobuf watch events parse in one pass; their type is known from the first bytes") {
  const std::string object = pod("p-1", "31", bytesField(10, "node-a"));
  std::string enveloped;
  protobuf::appendEnvelope(enveloped, "v1", "Pod", object);
  std::string frame;
  protobuf::appendWatchFrame(frame, "MODIFIED", enveloped);
  const std::string_view message = std::string_view(frame).substr(4);
  auto parser = podParser();
  CHECK(parser.objectEventType(message) == EventType::Modified);
  auto event = parser.parseWatchEvent(message);
  REQUIRE(event);
  CHECK(event->type == EventType::Modified);
  CHECK(event->resource_version == 31);
  REQUIRE(event->object);
  CHECK(event->object->plainBytes() == object);

  std::string bookmark_frame;
  std::string bookmark;
  protobuf::appendEnvelope(bookmark, "v1", "Pod", bytesField(1, bytesField(6, "40")));
  protobuf::appendWatchFrame(bookmark_frame, "BOOKMARK", bookmark);
  const std::string_view bookmark_message = std::string_view(bookmark_frame).substr(4);
  CHECK_FALSE(parser.objectEventType(bookmark_message));
  auto parsed_bookmark = parser.parseWatchEvent(bookmark_message);
  REQUIRE(parsed_bookmark);
  CHECK(parsed_bookmark->type == EventType::Bookmark);
  CHECK(parsed_bookmark->resource_version == 40);

  // Malformed input is an error, never a crash: every truncation of the event.
  for (size_t n = 0; n + 1 < message.size(); ++n) (void)parser.parseWatchEvent(message.substr(0, n));
  CHECK_FALSE(parser.parseObject("\x0a\x05" "ab"));
  CHECK_FALSE(parser.parseObject(pod("", "1")));          // no name
  CHECK_FALSE(parser.parseObject(pod("p", "12a")));       // RV not a number (R1)
}

TEST_CASE("E1/N2: a Status in protobuf reads back with its code, reason and message") {
  Status status{Reason::NotFound, "pods \"x\" not found"};
  status.details_name = "x";
  status.details_kind = "pods";
  const std::string body = statusProtobuf(status);
  const auto envelope = protobuf::parseEnvelope(body);
  REQUIRE(envelope);
  CHECK(envelope->api_version == "v1");
  CHECK(envelope->kind == "Status");
  const auto parsed = protobuf::parseStatus(envelope->raw);
  REQUIRE(parsed);
  CHECK(parsed->code == 404);
  CHECK(parsed->reason == "NotFound");
  CHECK(parsed->message == "pods \"x\" not found");
  // ListMeta's three empty strings, then status "Failure" (gogo writes non-pointer fields).
  CHECK(envelope->raw.substr(0, 10) == std::string("\x0a\x06\x0a\x00\x12\x00\x1a\x00\x12\x07", 10));
}
