// PackedObject: old versions kept deflated against a preset dictionary (issue #20).
#include "cache/packing/packed_object.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "cache/object_meta_parser.h"
#include "tests/unit/cache/doctest_string_view.h"
#include "tests/unit/cache/fixture_files.h"
#include "tests/unit/cache/test_objects.h"
#include "tests/unit/cache/test_protobuf_objects.h"

namespace cache {
namespace {

using testing::fixturesDir;
using testing::readFile;

// A pod shaped like a controller's: labels, owner, two containers with env and probes.
std::string realisticPod(const std::string& name, uint64_t rv) {
  std::string containers;
  for (const char* c : {"app", "sidecar"}) {
    if (!containers.empty()) containers += ",";
    containers += std::string(R"({"name":")") + c + R"(","image":"registry.example/)" + c +
                  R"(:1.2.3","env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},)"
                  R"({"name":"LOG_LEVEL","value":"info"}],"resources":{"requests":{"cpu":"100m","memory":"128Mi"}},)"
                  R"("readinessProbe":{"httpGet":{"path":"/healthz","port":8080},"periodSeconds":10},)"
                  R"("terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"})";
  }
  return R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","namespace":"web","uid":"8a1b2c3d-0000-4000-8000-)" + std::to_string(100000000000 + rv) +
         R"(","resourceVersion":")" + std::to_string(rv) +
         R"(","labels":{"app":"web","pod-template-hash":"7d9f8c6b5"},"ownerReferences":[{"apiVersion":"apps/v1",)"
         R"("kind":"ReplicaSet","name":"web-7d9f8c6b5","uid":"11111111-2222-4333-8444-555555555555","controller":true}]},)"
         R"("spec":{"containers":[)" +
         containers + R"(],"nodeName":"node-)" + std::to_string(rv % 7) +
         R"(","restartPolicy":"Always","schedulerName":"default-scheduler"},"status":{"phase":"Running","podIP":"10.0.)" +
         std::to_string(rv % 250) + R"(.7"}})";
}

ObjectConstSharedPtr parse(const std::string& json) {
  static ObjectMetaParser parser(ParserOptions{.field_spec = testing::podFields()});
  auto object = parser.parseObject(json);
  REQUIRE(object.has_value());
  return *object;
}

// A packed copy's metadata strings are copies, whose capacities may be smaller: its
// overhead is compared only where asked.
void checkSame(const Object& a, const Object& b, bool same_overhead = true) {
  CHECK(testing::bytesOf(a) == testing::bytesOf(b));
  CHECK(a.key() == b.key());
  CHECK(a.resourceVersion() == b.resourceVersion());
  CHECK(a.encoding() == b.encoding());
  CHECK(testing::uidOf(a) == testing::uidOf(b));
  CHECK(testing::metadataOf(a) == testing::metadataOf(b));
  CHECK(a.meta().namespace_name == b.meta().namespace_name);
  CHECK(a.meta().name == b.meta().name);
  CHECK(a.meta().generation == b.meta().generation);
  CHECK(a.meta().has_deletion_timestamp == b.meta().has_deletion_timestamp);
  CHECK(a.meta().labels == b.meta().labels);
  CHECK(a.meta().fields == b.meta().fields);
  CHECK(a.meta().index_values == b.meta().index_values);
  if (same_overhead) CHECK(a.overheadBytes() == b.overheadBytes());
  CHECK(a.overheadBytes() <= b.overheadBytes());
  std::string without_a, without_b;
  a.appendWithoutTypeMeta(without_a);
  b.appendWithoutTypeMeta(without_b);
  CHECK(without_a == without_b);
}

}  // namespace

TEST_CASE("A packed version unpacks to the same bytes, metadata and layout") {
  auto dictionary = std::make_shared<const PackDictionary>(parse(realisticPod("web-0", 1))->plainBytes());
  auto pod = parse(realisticPod("web-1", 2));
  auto packed = PackedObject::pack(*pod, dictionary);
  CHECK(packed->key() == "web/web-1");
  CHECK(packed->resourceVersion() == 2);
  CHECK(packed->plainSize() == testing::bytesOf(*pod).size());
  checkSame(*packed->unpack(), *pod);
  // Unpacked twice, the same again: the state lives in the packed bytes only.
  checkSame(*packed->unpack(), *pod);
  // A withResourceVersion() of the unpacked object edits the right bytes (DELETED events).
  CHECK(packed->unpack()->withResourceVersion(9)->plainBytes() == pod->withResourceVersion(9)->plainBytes());
}

TEST_CASE("Readers share one unpacked object while any of them holds it") {
  auto packed = PackedObject::pack(*parse(realisticPod("web-1", 2)), nullptr);
  auto first = packed->unpack();
  CHECK(packed->unpack() == first);  // a resume meets a version as one event's object and the next's prev
  first.reset();
  // Nobody holds it: inflated again, equal.
  CHECK(packed->unpack()->plainBytes() == parse(realisticPod("web-1", 2))->plainBytes());
}

TEST_CASE("The dictionary is what makes one object small") {
  const auto pod = parse(realisticPod("web-1", 2));
  const auto with = PackedObject::pack(*pod, std::make_shared<const PackDictionary>(realisticPod("web-0", 1)));
  const auto without = PackedObject::pack(*pod, nullptr);
  MESSAGE(testing::bytesOf(*pod).size() << " bytes: " << with->heapBytes() << " packed with a dictionary, "
                              << without->heapBytes() << " without");
  CHECK(with->heapBytes() * 2 < without->heapBytes());
  CHECK(with->heapBytes() * 3 < testing::bytesOf(*pod).size() + pod->overheadBytes());
  checkSame(*without->unpack(), *pod);
}

TEST_CASE("A dictionary keeps only the last 64 KiB of its sample, as far as LZ4 looks back") {
  const std::string sample(100000, 'x');
  PackDictionary dictionary(sample + "tail");
  CHECK(dictionary.bytes().size() == PackDictionary::kMaxBytes);
  CHECK(dictionary.bytes().ends_with("xtail"));
  const std::string big = realisticPod("web-2", 3);
  auto pod = parse(big);
  checkSame(*PackedObject::pack(*pod, std::make_shared<const PackDictionary>(sample))->unpack(), *pod);
}

TEST_CASE("Protobuf objects pack and unpack alike") {
  auto pod = testing::makeProtobufPod("web-1", "17");
  auto packed = PackedObject::pack(*pod, std::make_shared<const PackDictionary>(testing::makeProtobufPod("web-0", "5")->plainBytes()));
  checkSame(*packed->unpack(), *pod);
  CHECK(packed->unpack()->encoding() == Encoding::Protobuf);
}

TEST_CASE("A packed current object stays packed: readers unpack it into buffers of their own") {
  auto dictionary = std::make_shared<const PackDictionary>(parse(realisticPod("web-0", 1))->plainBytes());
  auto pod = parse(realisticPod("web-1", 2));
  CHECK_FALSE(pod->isPacked());
  auto packed = Object::packed(*pod, dictionary);
  CHECK(packed->isPacked());
  CHECK(packed->byteSize() == pod->byteSize());  // sizes need no unpacking
  CHECK(packed->meta().labels == pod->meta().labels);  // nor do selectors and indexes
  CHECK(packed->packedBytes() * 4 < pod->byteSize());
  // Concurrent readers each unpack into their own buffer; the instance is never written.
  std::vector<std::string> seen(4);
  std::vector<std::thread> readers;
  for (size_t i = 0; i < seen.size(); ++i) readers.emplace_back([&, i] { seen[i] = testing::bytesOf(*packed); });
  for (auto& t : readers) t.join();
  for (const std::string& bytes : seen) CHECK(bytes == pod->plainBytes());
  std::string buffer;
  const std::string_view view = packed->bytes(buffer);
  CHECK(view.data() == buffer.data());  // the caller's buffer, not the instance
  std::string copied(packed->byteSize(), '\0');
  packed->copyBytes(copied.data());
  CHECK(copied == pod->plainBytes());
  checkSame(*packed, *pod, false);
  CHECK(packed->withResourceVersion(9)->plainBytes() == pod->withResourceVersion(9)->plainBytes());
  auto proto = testing::makeProtobufPod("web-1", "17");
  checkSame(*Object::packed(*proto, std::make_shared<const PackDictionary>(testing::makeProtobufPod("web-0", "5")->plainBytes())),
            *proto, false);
}

TEST_CASE("Every object of the API type corpus survives packing byte for byte") {
  const std::filesystem::path dir = fixturesDir();
  if (dir.empty() || !std::filesystem::is_directory(dir)) {
    MESSAGE("fixture corpus not configured (KCP_FIXTURES_DIR); skipped");
    return;
  }
  ObjectMetaParser parser(ParserOptions{.field_spec = testing::podFields()});
  PackDictionaryConstSharedPtr dictionary;
  size_t objects = 0, plain = 0, packed_bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::string json = readFile(entry.path());
    const std::string placeholder = R"("resourceVersion": "resourceVersionValue")";
    const size_t at = json.find(placeholder);
    if (at == std::string::npos) continue;
    json.replace(at, placeholder.size(), R"("resourceVersion": "4242")");
    auto object = parser.parseObject(json);
    if (!object) continue;
    CAPTURE(entry.path().filename().string());
    if (!dictionary) dictionary = std::make_shared<const PackDictionary>(testing::bytesOf(**object));
    auto packed = PackedObject::pack(**object, dictionary);
    checkSame(*packed->unpack(), **object);
    checkSame(*Object::packed(**object, dictionary), **object, false);  // a packed current object
    ++objects;
    plain += testing::bytesOf(**object).size();
    packed_bytes += packed->heapBytes();
  }
  MESSAGE(objects << " objects, " << plain << " bytes, " << packed_bytes << " packed (with their metadata)");
  CHECK(objects > 100);
  CHECK(packed_bytes < plain);
}

}  // namespace cache
