#include "proxy/reads/partial_object_metadata.h"

#include <string>

#include <doctest/doctest.h>

#include "cache/object_meta_parser.h"
#include "tests/unit/cache/test_objects.h"

using namespace proxy;

namespace {

cache::ObjectConstSharedPtr parse(const std::string& json, bool strip_managed_fields = false) {
  cache::ObjectMetaParser parser(cache::ParserOptions{.strip_managed_fields = strip_managed_fields});
  auto object = parser.parseObject(json);
  REQUIRE(object.has_value());
  return *object;
}

// A custom resource as the apiserver stores and sends it: every key sorted, at every level.
const std::string kWidget =
    R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"a":"1","b":"\u003cx\u003e"},)"
    R"("creationTimestamp":"2025-01-02T03:04:05Z","finalizers":["example.com/f"],"generation":3,"labels":{"app":"web"},)"
    R"("managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:size":{}}},)"
    R"("manager":"kubectl","operation":"Update","time":"2025-01-02T03:04:05Z"}],"name":"w1","namespace":"default",)"
    R"("ownerReferences":[{"apiVersion":"v1","blockOwnerDeletion":true,"controller":true,"kind":"ConfigMap","name":"cm",)"
    R"("uid":"u-1"}],"resourceVersion":"42","uid":"6f1c"},"spec":{"size":1}})";

// The same metadata as encoding/json writes a metav1.ObjectMeta.
const std::string kWidgetMetadata =
    R"({"name":"w1","namespace":"default","uid":"6f1c","resourceVersion":"42","generation":3,)"
    R"("creationTimestamp":"2025-01-02T03:04:05Z","labels":{"app":"web"},"annotations":{"a":"1","b":"\u003cx\u003e"},)"
    R"("ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"cm","uid":"u-1","controller":true,)"
    R"("blockOwnerDeletion":true}],"finalizers":["example.com/f"],"managedFields":[{"manager":"kubectl",)"
    R"("operation":"Update","apiVersion":"example.com/v1","time":"2025-01-02T03:04:05Z","fieldsType":"FieldsV1",)"
    R"("fieldsV1":{"f:spec":{".":{},"f:size":{}}}}]})";

}  // namespace

TEST_CASE("A custom resource's sorted metadata comes out in ObjectMeta field order (N4)") {
  const auto widget = parse(kWidget);
  CHECK(objectMetaInStructOrder(storedMetadata(*widget, widget->plainBytes())) == kWidgetMetadata);
  CHECK(partialObjectMetadata(*widget, true) ==
        R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)" + kWidgetMetadata + "}\n");
}

TEST_CASE("Every ObjectMeta field has its place, deletion fields included") {
  const std::string sorted =
      R"({"creationTimestamp":"2025-01-02T03:04:05Z","deletionGracePeriodSeconds":0,)"
      R"("deletionTimestamp":"2025-01-03T00:00:00Z","finalizers":["f"],"generateName":"w-","generation":1,)"
      R"("name":"w-x","namespace":"ns","resourceVersion":"7","selfLink":"/apis/example.com/v1/w-x","uid":"u"})";
  CHECK(objectMetaInStructOrder(sorted) ==
        R"({"name":"w-x","generateName":"w-","namespace":"ns","selfLink":"/apis/example.com/v1/w-x","uid":"u",)"
        R"("resourceVersion":"7","generation":1,"creationTimestamp":"2025-01-02T03:04:05Z",)"
        R"("deletionTimestamp":"2025-01-03T00:00:00Z","deletionGracePeriodSeconds":0,"finalizers":["f"]})");
}

TEST_CASE("Empty and null metadata values are omitted as omitempty omits their zero values") {
  // What Unstructured's getters read as "", 0, nil or an empty map/slice is not written;
  // a key ObjectMeta does not have is dropped; deletionGracePeriodSeconds 0 is a
  // non-nil pointer and stays.
  const std::string sorted =
      R"({"annotations":{},"creationTimestamp":null,"deletionGracePeriodSeconds":null,"deletionTimestamp":"",)"
      R"("finalizers":[],"generateName":"","generation":0,"labels":{ },"managedFields":[],"name":"w",)"
      R"("ownerReferences":[],"resourceVersion":"5","somethingElse":{"x":1},"uid":null})";
  CHECK(objectMetaInStructOrder(sorted) == R"({"name":"w","resourceVersion":"5"})");
  CHECK(objectMetaInStructOrder("{}") == "{}");
  CHECK(objectMetaInStructOrder(R"({"generation":-2,"name":"w"})") == R"({"name":"w","generation":-2})");
}

TEST_CASE("Owner references always carry their four strings and only real booleans") {
  const std::string sorted =
      R"({"name":"w","ownerReferences":[{"controller":null,"kind":"A","name":"a"},)"
      R"({"apiVersion":"v1","blockOwnerDeletion":false,"kind":"B","name":"b","uid":"u-b"}]})";
  CHECK(objectMetaInStructOrder(sorted) ==
        R"({"name":"w","ownerReferences":[{"apiVersion":"","kind":"A","name":"a","uid":""},)"
        R"({"apiVersion":"v1","kind":"B","name":"b","uid":"u-b","blockOwnerDeletion":false}]})");
  // A list with a non-object element reads as nil: omitted whole.
  CHECK(objectMetaInStructOrder(R"({"name":"w","ownerReferences":[{"kind":"A"},"x"]})") == R"({"name":"w"})");
}

TEST_CASE("Managed fields entries are written in ManagedFieldsEntry order, subresource last") {
  const std::string sorted =
      R"({"managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{}},)"
      R"("manager":"ctl","operation":"Update","subresource":"status","time":"2025-01-02T03:04:05Z"},)"
      R"({"manager":"other","operation":"Apply","time":null}],"name":"w"})";
  CHECK(objectMetaInStructOrder(sorted) ==
        R"({"name":"w","managedFields":[{"manager":"ctl","operation":"Update","apiVersion":"example.com/v1",)"
        R"("time":"2025-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{}},"subresource":"status"},)"
        R"({"manager":"other","operation":"Apply"}]})");
  // Stripped at ingestion: nothing to rewrite.
  const auto stripped = parse(kWidget, true);
  CHECK(objectMetaInStructOrder(storedMetadata(*stripped, stripped->plainBytes())).find("managedFields") == std::string::npos);
}

TEST_CASE("Strings keep their escapes and may hold JSON punctuation") {
  const std::string sorted =
      R"({"annotations":{"k":"a\"},{[\\"},"labels":{"x":"y"},"name":"w\u0026","uid":"}"})";
  CHECK(objectMetaInStructOrder(sorted) ==
        R"({"name":"w\u0026","uid":"}","labels":{"x":"y"},"annotations":{"k":"a\"},{[\\"}})");
}

TEST_CASE("Built-in types keep the stored metadata bytes as they are") {
  const auto pod = cache::testing::makePod("ns", "b", 4, {{"app", "web"}});
  CHECK(partialObjectMetadata(*pod, false) ==
        R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"4","labels":{"app":"web"}}})"
        "\n");
}

TEST_CASE("Metadata that does not scan as one JSON object is returned unchanged") {
  for (const std::string bad : {R"({"name":"w")", R"({"name":"w"}x)", R"({"name" "w"})", "[]", ""}) {
    CAPTURE(bad);
    CHECK(objectMetaInStructOrder(bad) == bad);
  }
}
