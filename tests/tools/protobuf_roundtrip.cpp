// protobuf-roundtrip: reads a protobuf answer of kube-apiserver with cache/protobuf/protobuf_list.h
// and writes it again with the same writers the proxy will serve from, so a test can check
// that reading and writing agree with the apiserver byte for byte (contract N2, W2).
//
//   protobuf-roundtrip list FILE    a LIST body
//   protobuf-roundtrip watch FILE   a watch body (the frames, de-chunked)
//   protobuf-roundtrip bookmark FILE RV END
//                                   FILE is one BOOKMARK frame's payload (a WatchEvent);
//                                   prints the hex of the payload the proxy writes for a
//                                   bookmark at RV (END 1: initial-events-end) shaped like it
//
// Prints one JSON line: {"equal":true|false,"first_difference":N,"kind":"PodList",
// "resourceVersion":"...","continue":"...","remainingItemCount":N|null,"items":[["ns/name","rv"],...]} for a
// list, and for a watch
// {"equal":...,"events":[["ADDED","ns/name","rv"],...]}. Exit status 1 when unreadable.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "cache/go_json.h"
#include "cache/protobuf/protobuf_list.h"
#include "cache/protobuf/protobuf_object.h"

namespace {

std::string readFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

size_t firstDifference(std::string_view a, std::string_view b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

std::string keyAndRv(std::string_view object_message) {
  const auto meta = cache::protobuf::parseObjectMeta(object_message);
  if (!meta) return "null";
  std::string key(meta->namespace_);
  if (!key.empty()) key += "/";
  key += meta->name;
  return "[" + cache::goJsonString(key) + "," + cache::goJsonString(meta->resource_version) + "]";
}

void report(std::string_view original, std::string_view written, const std::string& rest) {
  const bool equal = original == written;
  std::printf("{\"equal\":%s,\"first_difference\":%zu,\"original_bytes\":%zu,\"written_bytes\":%zu%s}\n",
              equal ? "true" : "false", equal ? original.size() : firstDifference(original, written),
              original.size(), written.size(), rest.c_str());
}

int list(const std::string& body) {
  const auto list = cache::protobuf::parseList(body);
  if (!list) return 1;
  std::string written;
  cache::protobuf::appendList(written, list->api_version, list->kind, list->metadata, list->items);
  std::string rest = ",\"kind\":" + cache::goJsonString(list->kind) +
                     ",\"resourceVersion\":" + cache::goJsonString(list->metadata.resource_version) +
                     ",\"continue\":" + cache::goJsonString(list->metadata.continue_token) + ",\"remainingItemCount\":" +
                     (list->metadata.remaining_item_count ? std::to_string(*list->metadata.remaining_item_count) : "null") +
                     ",\"items\":[";
  for (size_t i = 0; i < list->items.size(); ++i) rest += (i ? "," : "") + keyAndRv(list->items[i]);
  report(body, written, rest + "]");
  return 0;
}

int watch(const std::string& body) {
  std::string_view stream = body;
  std::string written;
  std::string events;
  bool malformed = false;
  while (auto event = cache::protobuf::takeWatchFrame(stream, malformed)) {
    cache::protobuf::appendWatchFrame(written, event->type, event->object);
    const auto envelope = cache::protobuf::parseEnvelope(event->object);
    events += std::string(events.empty() ? "" : ",") + "[" + cache::goJsonString(event->type) + "," +
              (envelope ? keyAndRv(envelope->raw) : "null") + "]";
  }
  if (malformed || !stream.empty()) return 1;
  report(body, written, ",\"events\":[" + events + "]");
  return 0;
}

}  // namespace

int bookmark(const std::string& payload, uint64_t rv, bool end) {
  std::string frame("\0\0\0\0", 4);  // takeWatchFrame wants a whole frame
  frame[0] = static_cast<char>(payload.size() >> 24);
  frame[1] = static_cast<char>(payload.size() >> 16);
  frame[2] = static_cast<char>(payload.size() >> 8);
  frame[3] = static_cast<char>(payload.size());
  frame += payload;
  std::string_view stream = frame;
  bool malformed = false;
  const auto event = cache::protobuf::takeWatchFrame(stream, malformed);
  const auto envelope = event ? cache::protobuf::parseEnvelope(event->object) : std::nullopt;
  const auto object = envelope ? cache::protobuf::bookmarkObject(envelope->raw, rv, end) : std::nullopt;
  if (!object) return 1;
  std::string enveloped;
  cache::protobuf::appendEnvelope(enveloped, envelope->api_version, envelope->kind, *object);
  std::string written;
  cache::protobuf::appendWatchFrame(written, "BOOKMARK", enveloped);
  for (unsigned char c : std::string_view(written).substr(4)) std::printf("%02x", c);
  std::printf("\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && std::string_view(argv[1]) == "bookmark") {
    const int status = bookmark(readFile(argv[2]), std::stoull(argv[3]), std::string_view(argv[4]) == "1");
    if (status == 1) std::printf("{\"error\":\"unreadable bookmark\"}\n");
    return status;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: protobuf-roundtrip list|watch FILE | bookmark FILE RV END\n");
    return 2;
  }
  const std::string mode = argv[1];
  const std::string body = readFile(argv[2]);
  const int status = mode == "list" ? list(body) : mode == "watch" ? watch(body) : 2;
  if (status == 1) std::printf("{\"error\":\"unreadable %s body\"}\n", mode.c_str());
  return status;
}
