#include "cache/object_meta_parser.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "tests/unit/cache/doctest_string_view.h"
#include "tests/unit/cache/fixture_files.h"
#include "tests/unit/cache/test_objects.h"
#include <simdjson.h>

namespace cache {
namespace {

using testing::fixturesDir;
using testing::readFile;

std::shared_ptr<const FieldSpec> podFieldSpec() {
  auto spec = std::make_shared<FieldSpec>();
  spec->fields = {{"spec.nodeName", {"spec", "nodeName"}},
                  {"spec.restartPolicy", {"spec", "restartPolicy"}},
                  {"spec.hostNetwork", {"spec", "hostNetwork"}},
                  {"status.phase", {"status", "phase"}}};
  return spec;
}

const char* kPod = R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-0","namespace":"default",)"
                   R"("uid":"u-1","resourceVersion":"12011","generation":3,"labels":{"tier":"web","app":"x"},)"
                   R"("managedFields":[{"manager":"kubectl","fieldsV1":{"f:metadata":{}}}],"annotations":{"a":"b"}},)"
                   R"("spec":{"nodeName":"node-1","hostNetwork":true,"priority":7},"status":{"phase":"Running"}})";

bool reparses(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  return parser.parse(padded).error() == simdjson::SUCCESS;
}

}  // namespace

TEST_CASE("A pod's metadata, labels and selectable fields are extracted in one pass") {
  ObjectMetaParser parser(ParserOptions{.field_spec = podFieldSpec()});
  auto object = parser.parseObject(kPod);
  REQUIRE(object.has_value());
  const Object& pod = **object;
  CHECK(pod.plainBytes() == kPod);
  CHECK(pod.key() == "default/web-0");
  CHECK(testing::uidOf(pod) == "u-1");
  CHECK(pod.resourceVersion() == 12011);
  CHECK(pod.meta().generation == 3);
  CHECK_FALSE(pod.meta().has_deletion_timestamp);
  CHECK(pod.meta().labels == Labels{{"app", "x"}, {"tier", "web"}});
  // spec.restartPolicy is absent: no entry, read as "".
  CHECK(pod.meta().fields == Fields{{"spec.hostNetwork", "true"}, {"spec.nodeName", "node-1"}, {"status.phase", "Running"}});
  CHECK(lookup(pod.meta().fields, "spec.restartPolicy").value_or("") == "");
  CHECK(reparses(pod.plainBytes()));
}

TEST_CASE("Writing a list item cuts kind and apiVersion without re-serializing (L1)") {
  ObjectMetaParser parser(ParserOptions{});
  SUBCASE("type meta first") {
    auto object = parser.parseObject(R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"5"}})");
    REQUIRE(object.has_value());
    std::string out;
    (*object)->appendWithoutTypeMeta(out);
    CHECK(out == R"({"metadata":{"name":"a","resourceVersion":"5"}})");
  }
  SUBCASE("type meta last") {
    auto object = parser.parseObject(R"({"metadata":{"name":"a","resourceVersion":"5"},"apiVersion":"v1", "kind":"Pod"})");
    REQUIRE(object.has_value());
    std::string out;
    (*object)->appendWithoutTypeMeta(out);
    CHECK(out == R"({"metadata":{"name":"a","resourceVersion":"5"}})");
  }
  SUBCASE("type meta around other members") {
    auto object = parser.parseObject(R"({"kind":"Pod","metadata":{"name":"a","resourceVersion":"5"},"apiVersion":"v1","spec":{}})");
    REQUIRE(object.has_value());
    std::string out;
    (*object)->appendWithoutTypeMeta(out);
    CHECK(out == R"({"metadata":{"name":"a","resourceVersion":"5"},"spec":{}})");
  }
}

TEST_CASE("Stripping managedFields splices them out of the stored bytes") {
  ObjectMetaParser parser(ParserOptions{.field_spec = podFieldSpec(), .strip_managed_fields = true});
  auto object = parser.parseObject(kPod);
  REQUIRE(object.has_value());
  std::string expected = kPod;
  const std::string managed = R"("managedFields":[{"manager":"kubectl","fieldsV1":{"f:metadata":{}}}],)";
  expected.erase(expected.find(managed), managed.size());
  CHECK((*object)->plainBytes() == expected);
  CHECK(reparses((*object)->plainBytes()));
  CHECK((*object)->meta().labels.size() == 2);

  SUBCASE("as the last metadata member") {
    auto last = parser.parseObject(R"({"metadata":{"name":"a","resourceVersion":"5","managedFields":[{}]},"spec":{}})");
    REQUIRE(last.has_value());
    CHECK((*last)->plainBytes() == R"({"metadata":{"name":"a","resourceVersion":"5"},"spec":{}})");
  }
}

TEST_CASE("A DELETED object can carry the deletion resourceVersion by splicing (W3)") {
  ObjectMetaParser parser(ParserOptions{.strip_managed_fields = true});
  auto object = parser.parseObject(kPod);
  REQUIRE(object.has_value());
  auto deleted = (*object)->withResourceVersion(1234567);
  CHECK(deleted->resourceVersion() == 1234567);
  CHECK(deleted->plainBytes().find(R"("resourceVersion":"1234567")") != std::string_view::npos);
  CHECK(reparses(deleted->plainBytes()));
  std::string out;
  deleted->appendWithoutTypeMeta(out);
  CHECK(out.starts_with(R"({"metadata":{"name":"web-0")"));
  auto again = parser.parseObject(deleted->plainBytes());
  REQUIRE(again.has_value());
  CHECK((*again)->resourceVersion() == 1234567);
}

std::string_view storedMetadataOf(const Object& object) {
  return object.plainBytes().substr(object.layout().metadata.begin, object.layout().metadata.size());
}

TEST_CASE("metadata.uid and the metadata object are read from the stored bytes, through every splice") {
  ObjectMetaParser parser(ParserOptions{.strip_managed_fields = true});
  SUBCASE("uid after managedFields: the strip moves it") {
    auto object = parser.parseObject(
        R"({"metadata":{"name":"a","managedFields":[{"manager":"m"}],"uid":"6f1c-after","resourceVersion":"5"}, "x":1})");
    REQUIRE(object.has_value());
    CHECK(testing::uidOf(**object) == "6f1c-after");
    CHECK(storedMetadataOf(**object) == R"({"name":"a","uid":"6f1c-after","resourceVersion":"5"})");
    // A DELETED copy splices the RV digits, before or after the uid.
    auto deleted = (*object)->withResourceVersion(123456789);
    CHECK(testing::uidOf(*deleted) == "6f1c-after");
    CHECK(storedMetadataOf(*deleted) == R"({"name":"a","uid":"6f1c-after","resourceVersion":"123456789"})");
  }
  SUBCASE("type meta inserted in front of a list item moves it") {
    auto list = parser.parseList(R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},)"
                                 R"("items":[{"metadata":{"name":"a","uid":"u-item","resourceVersion":"5"}}]})");
    REQUIRE(list.has_value());
    REQUIRE(list->items.size() == 1);
    CHECK(testing::uidOf(*list->items[0]) == "u-item");
    CHECK(storedMetadataOf(*list->items[0]) == R"({"name":"a","uid":"u-item","resourceVersion":"5"})");
  }
  SUBCASE("absent, or written with escapes: empty, and a non-string uid is an error") {
    CHECK(testing::uidOf(**parser.parseObject(R"({"metadata":{"name":"a","resourceVersion":"5"}})")).empty());
    auto escaped = parser.parseObject(R"({"metadata":{"name":"a","uid":"u\"1","resourceVersion":"5"}})");
    REQUIRE(escaped.has_value());
    CHECK(testing::uidOf(**escaped).empty());
    CHECK_FALSE(parser.parseObject(R"({"metadata":{"name":"a","uid":7,"resourceVersion":"5"}})").has_value());
    CHECK_FALSE(parser.parseObject(R"({"metadata":{"name":"a","uid":"bad\q","resourceVersion":"5"}})").has_value());
  }
}

TEST_CASE("Bad objects are errors, not crashes") {
  ObjectMetaParser parser(ParserOptions{});
  CHECK_FALSE(parser.parseObject("{").has_value());
  CHECK_FALSE(parser.parseObject("[]").has_value());
  CHECK_FALSE(parser.parseObject(R"({"metadata":{"resourceVersion":"1"}})").has_value());
  CHECK_FALSE(parser.parseObject(R"({"metadata":{"name":"a"}})").has_value());
  CHECK_FALSE(parser.parseObject(R"({"metadata":{"name":"a","resourceVersion":"abc"}})").has_value());
  CHECK_FALSE(parser.parseObject(R"({"metadata":{"name":"a","resourceVersion":"99999999999999999999"}})").has_value());
  CHECK_FALSE(parser.parseObject(R"({"metadata":{"name":"a","resourceVersion":12}})").has_value());
  // Two metadata members (found by fuzzing: the managedFields splice left a dangling comma).
  ParserOptions strip;
  strip.strip_managed_fields = true;
  ObjectMetaParser stripping(strip);
  CHECK_FALSE(stripping
                  .parseObject(R"({"metadata":{"name":"a","resourceVersion":"1","managedFields":[{}]},)"
                               R"("metadata":{"name":"a","resourceVersion":"1"}})")
                  .has_value());
  auto error = parser.parseObject(R"({"metadata":{"name":"a","resourceVersion":"x1"}})");
  REQUIRE_FALSE(error.has_value());
  CHECK(error.error().message.find("x1") != std::string::npos);
}

TEST_CASE("Watch event lines yield the type and the object, bookmarks only their RV") {
  ObjectMetaParser parser(ParserOptions{.field_spec = podFieldSpec()});
  auto added = parser.parseWatchEvent(std::string(R"({"type":"ADDED","object":)") + kPod + "}\n");
  REQUIRE(added.has_value());
  CHECK(added->type == EventType::Added);
  CHECK(added->object->plainBytes() == kPod);
  CHECK(added->resource_version == 12011);

  auto reversed = parser.parseWatchEvent(std::string(R"({"object":)") + kPod + R"(,"type":"DELETED"})");
  REQUIRE(reversed.has_value());
  CHECK(reversed->type == EventType::Deleted);
  CHECK(reversed->object->plainBytes() == kPod);

  auto bookmark = parser.parseWatchEvent(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12746"},"spec":{"containers":null},"status":{}}})");
  REQUIRE(bookmark.has_value());
  CHECK(bookmark->type == EventType::Bookmark);
  CHECK(bookmark->object == nullptr);
  CHECK(bookmark->resource_version == 12746);

  const std::string status = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":410})";
  auto error = parser.parseWatchEvent(R"({"type":"ERROR","object":)" + status + "}");
  REQUIRE(error.has_value());
  CHECK(error->type == EventType::Error);
  CHECK(error->error_status == status);

  CHECK_FALSE(parser.parseWatchEvent(R"({"type":"NOPE","object":{}})").has_value());
  CHECK_FALSE(parser.parseWatchEvent(R"({"type":"ADDED"})").has_value());
  CHECK_FALSE(parser.parseWatchEvent(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})").has_value());
}

TEST_CASE("A list body yields items with kind/apiVersion spliced in, and the list RV (L1)") {
  ObjectMetaParser parser(ParserOptions{});
  const std::string body =
      R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"900","continue":"tok"},"items":[)"
      R"({"metadata":{"name":"a","namespace":"n","resourceVersion":"7"}} , )"
      R"({"metadata":{"name":"b","namespace":"n","resourceVersion":"8"},"spec":{}}]})";
  auto list = parser.parseList(body);
  REQUIRE(list.has_value());
  CHECK(list->resource_version == 900);
  CHECK(list->continue_token == "tok");
  REQUIRE(list->items.size() == 2);
  CHECK(list->items[0]->plainBytes() == R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"7"}})");
  std::string out;
  list->items[1]->appendWithoutTypeMeta(out);
  CHECK(out == R"({"metadata":{"name":"b","namespace":"n","resourceVersion":"8"},"spec":{}})");
  CHECK(list->items[1]->key() == "n/b");

  SUBCASE("a list kind written with an escape gives its items valid JSON (a fuzz finding)") {
    auto escaped = parser.parseList(R"({"kind":"Widg\tList","apiVersion":"example.com/v2",)"
                                    R"("metadata":{"resourceVersion":"2"},"items":[{"metadata":{"name":"w","resourceVersion":"2"}}]})");
    REQUIRE(escaped.has_value());
    REQUIRE(escaped->items.size() == 1);
    CHECK(escaped->items[0]->plainBytes() == R"({"kind":"Widg\t","apiVersion":"example.com/v2","metadata":{"name":"w","resourceVersion":"2"}})");
    CHECK(parser.parseObject(std::string(escaped->items[0]->plainBytes())).has_value());
  }
  SUBCASE("empty and null item lists") {
    auto empty = parser.parseList(R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":[]})");
    REQUIRE(empty.has_value());
    CHECK(empty->items.empty());
    auto null = parser.parseList(R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":null})");
    REQUIRE(null.has_value());
    CHECK(null->items.empty());
  }
  SUBCASE("padded input is parsed in place") {
    simdjson::padded_string padded(body);
    auto in_place = parser.parseList(simdjson::padded_string_view(padded));
    REQUIRE(in_place.has_value());
    CHECK(in_place->items.size() == 2);
  }
  CHECK_FALSE(parser.parseList(R"({"items":[]})").has_value());
  CHECK_FALSE(parser.parseList(R"({"metadata":{"resourceVersion":"1"},"items":[{"metadata":{}}]})").has_value());
}

TEST_CASE("Custom JSON-path index values are extracted with the metadata") {
  ObjectMetaParser parser(ParserOptions{.index_paths = {{"owner", {"metadata", "ownerName"}}, {"sa", {"spec", "serviceAccountName"}}}});
  auto object = parser.parseObject(
      R"({"metadata":{"name":"a","resourceVersion":"1","ownerName":"rs-1"},"spec":{"serviceAccountName":"default"}})");
  REQUIRE(object.has_value());
  CHECK((*object)->meta().index_values == Fields{{"owner", "rs-1"}, {"sa", "default"}});
}

TEST_CASE("Every fixture of the API type corpus parses cleanly or is rejected with a message") {
  const std::filesystem::path dir = fixturesDir();
  if (dir.empty() || !std::filesystem::is_directory(dir)) {
    MESSAGE("fixture corpus not configured (KCP_FIXTURES_DIR); skipped");
    return;
  }
  ObjectMetaParser parser(ParserOptions{.field_spec = podFieldSpec()});
  ObjectMetaParser stripping(ParserOptions{.strip_managed_fields = true});
  int files = 0, objects = 0, without_metadata = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    std::string json = readFile(entry.path());
    CAPTURE(entry.path().filename().string());
    // The corpus fills every string with "<field>Value": its RVs are not numbers.
    auto as_is = parser.parseObject(json);
    if (!as_is) {
      CHECK(!as_is.error().message.empty());
    }
    simdjson::dom::parser dom;
    simdjson::padded_string padded(json);
    simdjson::dom::element truth = dom.parse(padded).value();
    const std::string placeholder = R"("resourceVersion": "resourceVersionValue")";
    const size_t at = json.find(placeholder);
    if (truth["metadata"]["name"].error() != simdjson::SUCCESS || at == std::string::npos) {
      ++without_metadata;
      CHECK_FALSE(as_is.has_value());
      continue;
    }
    CHECK_FALSE(as_is.has_value());
    json.replace(at, placeholder.size(), R"("resourceVersion": "4242")");
    auto object = parser.parseObject(json);
    REQUIRE(object.has_value());
    ++objects;
    const ObjectMeta& meta = (*object)->meta();
    CHECK(meta.name == "nameValue");
    CHECK(meta.resource_version == 4242);
    CHECK((*object)->plainBytes() == json);
    if (meta.namespace_name == "namespaceValue") {
      CHECK((*object)->key() == "namespaceValue/nameValue");
      CHECK(testing::uidOf(**object) == "uidValue");
      CHECK(meta.generation == 7);
      CHECK(meta.has_deletion_timestamp);
      CHECK(meta.labels == Labels{{"labelsKey", "labelsValue"}});
    }
    auto stripped = stripping.parseObject(json);
    REQUIRE(stripped.has_value());
    CHECK(reparses((*stripped)->plainBytes()));
    simdjson::padded_string stripped_copy((*stripped)->plainBytes());
    simdjson::dom::element stripped_truth = dom.parse(stripped_copy).value();
    CHECK(stripped_truth["metadata"]["managedFields"].error() == simdjson::NO_SUCH_FIELD);
    CHECK(stripped_truth["metadata"]["name"].error() == simdjson::SUCCESS);
    std::string without_type_meta;
    (*stripped)->appendWithoutTypeMeta(without_type_meta);
    CHECK(reparses(without_type_meta));
    CHECK(without_type_meta.find("\"kind\": \"") != 0);
  }
  MESSAGE(files << " fixtures, " << objects << " objects, " << without_metadata << " without metadata");
  CHECK(files > 100);
  CHECK(objects > 100);
}

}  // namespace cache
