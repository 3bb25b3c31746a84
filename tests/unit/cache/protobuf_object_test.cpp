// The protobuf reader (cache/protobuf/protobuf_object.h, contract N2) against objects encoded by the
// API machinery itself: each NAME.pb was written by client-go's protobuf serializer from an
// API round-trip fixture (every field set), and NAME.meta.json holds what client-go's
// meta.Accessor reads of it (tests/realcluster/cmd/protofixtures). The folder defaults to
// the ten committed in tests/testdata/protobuf; the real-cluster tier points
// KCP_PROTOBUF_FIXTURES_DIR at all 168 built-in types.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cache/protobuf/protobuf_object.h"

namespace {

using cache::protobuf::parseEnvelope;
using cache::protobuf::parseObjectMeta;

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::filesystem::path fixturesDir() {
  if (const char* env = std::getenv("KCP_PROTOBUF_FIXTURES_DIR"); env && *env) return env;
  return KCP_PROTOBUF_FIXTURES_DIR;
}

using StringMap = std::map<std::string, std::string, std::less<>>;

StringMap stringMap(simdjson::dom::element value) {
  StringMap out;
  simdjson::dom::object object;
  if (value.get(object)) return out;  // null: no entries
  for (auto [key, entry] : object) out.emplace(std::string(key), std::string(std::string_view(entry)));
  return out;
}

StringMap stringMap(const std::vector<std::pair<std::string_view, std::string_view>>& entries) {
  StringMap out;
  for (auto [key, value] : entries) out.emplace(std::string(key), std::string(value));
  return out;
}

// A pod as the apiserver encodes it, built by hand: envelope{typeMeta{v1, Pod}, raw{1:
// metadata{1: "web-0", 3: "default", 6: "42", 11: {1: "app", 2: "web"}}, 2: spec{}}}.
std::string handBuiltPod() {
  const std::string metadata = std::string("\x0a\x05web-0", 7) + std::string("\x1a\x07" "default", 9) +
                               std::string("\x32\x02" "42", 4) + std::string("\x5a\x0a\x0a\x03" "app\x12\x03" "web", 12);
  const std::string object = "\x0a" + std::string(1, char(metadata.size())) + metadata + std::string("\x12\x00", 2);
  const std::string type_meta = std::string("\x0a\x02v1\x12\x03Pod", 9);
  const std::string unknown = "\x0a" + std::string(1, char(type_meta.size())) + type_meta + "\x12" +
                              std::string(1, char(object.size())) + object;
  return std::string(cache::protobuf::kMagic) + unknown;
}

}  // namespace

TEST_CASE("N2: the envelope and ObjectMeta of a hand-built pod are read by field number") {
  const std::string bytes = handBuiltPod();
  const auto envelope = parseEnvelope(bytes);
  REQUIRE(envelope);
  CHECK(envelope->api_version == "v1");
  CHECK(envelope->kind == "Pod");
  CHECK(envelope->content_type.empty());
  const auto meta = parseObjectMeta(envelope->raw);
  REQUIRE(meta);
  CHECK(meta->name == "web-0");
  CHECK(meta->namespace_ == "default");
  CHECK(meta->resource_version == "42");
  CHECK(stringMap(meta->labels) == StringMap{{"app", "web"}});
  // The spans point into the object as stored: a writer can splice the RV in place.
  CHECK(envelope->raw.substr(meta->resource_version_value.offset, meta->resource_version_value.length) == "42");
  CHECK(envelope->raw.substr(meta->metadata.offset - 2, 1) == "\x0a");
}

TEST_CASE("N2: a present but empty resourceVersion has its span in the object, an absent one none") {
  // object {1: metadata{1: "a", 6: ""}}: the empty RV sits at offset 2 + 3 + 2 = 7.
  const std::string empty_rv("\x0a\x05\x0a\x01" "a\x32\x00", 7);
  const auto meta = parseObjectMeta(empty_rv);
  REQUIRE(meta);
  CHECK(meta->resource_version.empty());
  CHECK(meta->resource_version_value.offset == 7);
  CHECK(meta->resource_version_value.length == 0);
  const std::string no_rv("\x0a\x03\x0a\x01" "a", 5);
  const auto absent = parseObjectMeta(no_rv);
  REQUIRE(absent);
  CHECK(absent->resource_version_value.offset == 0);
}

TEST_CASE("N2: bytes that are not an envelope are refused") {
  CHECK_FALSE(parseEnvelope(""));
  CHECK_FALSE(parseEnvelope("{\"kind\":\"Pod\"}"));
  CHECK_FALSE(parseEnvelope(std::string("k8s\x01", 4)));
  const std::string pod = handBuiltPod();
  // A length that runs past the end, and a tag that is cut short.
  CHECK_FALSE(parseEnvelope(pod.substr(0, pod.size() - 3)));
  CHECK_FALSE(parseEnvelope(std::string(cache::protobuf::kMagic) + "\x12\x7f"));
  CHECK_FALSE(parseEnvelope(std::string(cache::protobuf::kMagic) + "\x80"));
  // Field 2 (raw) as a varint cannot hold bytes.
  CHECK_FALSE(parseEnvelope(std::string(cache::protobuf::kMagic) + "\x10\x01"));
}

TEST_CASE("N2: an object with two ObjectMeta fields is refused, one without any reads empty") {
  const std::string pod = handBuiltPod();  // the views below point into it
  const auto envelope = parseEnvelope(pod);
  REQUIRE(envelope);
  const std::string raw(envelope->raw);
  const std::string twice = raw.substr(0, raw.size() - 2) + raw;  // metadata, metadata, spec
  CHECK_FALSE(parseObjectMeta(twice));
  const std::string spec_only("\x12\x00", 2);
  const auto empty = parseObjectMeta(spec_only);
  REQUIRE(empty);
  CHECK(empty->name.empty());
  CHECK(empty->metadata.length == 0);
}

TEST_CASE("N2: every fixture the API machinery encoded reads as client-go reads it") {
  const std::filesystem::path dir = fixturesDir();
  REQUIRE(std::filesystem::is_directory(dir));
  simdjson::dom::parser json;
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".pb") continue;
    const std::string name = entry.path().stem().string();
    CAPTURE(name);
    const std::string bytes = readFile(entry.path());
    const simdjson::padded_string expected_text(readFile(dir / (name + ".meta.json")));
    simdjson::dom::element expected;
    REQUIRE(json.parse(expected_text).get(expected) == simdjson::SUCCESS);

    const auto envelope = parseEnvelope(bytes);
    REQUIRE(envelope);
    CHECK(envelope->api_version == std::string_view(expected["apiVersion"]));
    CHECK(envelope->kind == std::string_view(expected["kind"]));
    const auto meta = parseObjectMeta(envelope->raw);
    REQUIRE(meta);
    CHECK(meta->name == std::string_view(expected["name"]));
    CHECK(meta->generate_name == std::string_view(expected["generateName"]));
    CHECK(meta->namespace_ == std::string_view(expected["namespace"]));
    CHECK(meta->uid == std::string_view(expected["uid"]));
    CHECK(meta->resource_version == std::string_view(expected["resourceVersion"]));
    CHECK(meta->generation == int64_t(expected["generation"]));
    CHECK(meta->creation_timestamp_seconds == int64_t(expected["creationTimestampSeconds"]));
    CHECK(meta->has_deletion_timestamp == bool(expected["hasDeletionTimestamp"]));
    CHECK(stringMap(meta->labels) == stringMap(expected["labels"]));
    CHECK(stringMap(meta->annotations) == stringMap(expected["annotations"]));
    if (!meta->resource_version.empty()) {
      CHECK(envelope->raw.substr(meta->resource_version_value.offset, meta->resource_version_value.length) ==
            meta->resource_version);
    }
    // Every cut of the object is refused or read without reaching past it (ASan watches).
    for (size_t cut = 0; cut < envelope->raw.size(); cut += 7) (void)parseObjectMeta(envelope->raw.substr(0, cut));
    ++checked;
  }
  MESSAGE(checked << " protobuf fixtures checked in " << dir.string());
  CHECK(checked >= 10);
}
