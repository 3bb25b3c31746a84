// The protobuf list and watch framing (cache/protobuf/protobuf_list.h, contract N2, W2): what the
// writers produce, the readers read back. The byte-for-byte agreement with kube-apiserver
// is checked in the real-cluster tier (test_real_protobuf.py).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cache/protobuf/protobuf_list.h"
#include "cache/protobuf/protobuf_object.h"

namespace {

using namespace cache::protobuf;

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The raw object messages of the committed fixtures.
std::vector<std::string> fixtureObjects() {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(KCP_PROTOBUF_FIXTURES_DIR)) {
    if (entry.path().extension() != ".pb") continue;
    const std::string bytes = readFile(entry.path());
    if (auto envelope = parseEnvelope(bytes)) out.emplace_back(envelope->raw);
  }
  return out;
}

}  // namespace

TEST_CASE("N2: a list written from stored items reads back with its ListMeta and items") {
  const std::vector<std::string> objects = fixtureObjects();
  REQUIRE(objects.size() >= 10);
  const std::vector<std::string_view> items(objects.begin(), objects.end());
  std::string body;
  appendList(body, "v1", "PodList", ListMetaView{"", "1234", "continue-token", 7}, items);
  const auto list = parseList(body);
  REQUIRE(list);
  CHECK(list->api_version == "v1");
  CHECK(list->kind == "PodList");
  CHECK(list->metadata.resource_version == "1234");
  CHECK(list->metadata.continue_token == "continue-token");
  CHECK(list->metadata.remaining_item_count == 7);
  REQUIRE(list->items.size() == items.size());
  for (size_t i = 0; i < items.size(); ++i) CHECK(list->items[i] == items[i]);
  // A list without remainingItemCount does not write the field.
  std::string plain;
  appendList(plain, "v1", "PodList", ListMetaView{"", "1234", "", std::nullopt}, {});
  CHECK_FALSE(parseList(plain)->metadata.remaining_item_count.has_value());
  // Empty strings are written (gogo marshals non-pointer fields always): 0a 00 / 1a 00 / 22 00.
  CHECK(plain.find(std::string("\x1a\x00\x22\x00", 4)) == plain.size() - 4);
}

TEST_CASE("S1: a sharded list's ListMeta carries shardInfo.selector (field 5, its field 1) and reads back") {
  const std::string selector = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
  std::string body;
  ListMetaView meta{"", "99", "", std::nullopt};
  meta.shard_selector = selector;
  appendList(body, "v1", "ConfigMapList", meta, {});
  const auto list = parseList(body);
  REQUIRE(list);
  CHECK(list->metadata.shard_selector == selector);
  // ShardInfo{selector} nested in ListMeta's field 5: 2a <len> 0a <len> selector.
  std::string expected = "\x2a";
  expected += static_cast<char>(selector.size() + 2);
  expected += "\x0a";
  expected += static_cast<char>(selector.size());
  expected += selector;
  CHECK(body.find(expected) != std::string::npos);
  std::string plain;
  appendList(plain, "v1", "ConfigMapList", ListMetaView{"", "99", "", std::nullopt}, {});
  CHECK(parseList(plain)->metadata.shard_selector.empty());
}

TEST_CASE("W2: watch frames are length-prefixed WatchEvents, read one whole frame at a time") {
  const std::vector<std::string> objects = fixtureObjects();
  std::string pod;
  appendEnvelope(pod, "v1", "Pod", objects.front());
  std::string stream;
  appendWatchFrame(stream, "ADDED", pod);
  appendWatchFrame(stream, "DELETED", pod);
  std::string_view rest = stream;
  bool malformed = false;
  // A partial frame waits for more bytes.
  std::string_view partial = rest.substr(0, 10);
  CHECK_FALSE(takeWatchFrame(partial, malformed));
  CHECK_FALSE(malformed);
  auto first = takeWatchFrame(rest, malformed);
  REQUIRE(first);
  CHECK(first->type == "ADDED");
  CHECK(first->object == pod);
  auto second = takeWatchFrame(rest, malformed);
  REQUIRE(second);
  CHECK(second->type == "DELETED");
  CHECK(rest.empty());
  // A whole frame that is not a WatchEvent is malformed (field 1 cannot be a varint).
  std::string_view junk("\x00\x00\x00\x02\x08\x00", 6);
  CHECK_FALSE(takeWatchFrame(junk, malformed));
  CHECK(malformed);
}
