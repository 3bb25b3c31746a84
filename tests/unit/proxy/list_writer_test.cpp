#include "proxy/reads/list_writer.h"

#include <algorithm>

#include <doctest/doctest.h>

#include "cache/object_meta_parser.h"
#include "cache/protobuf/protobuf_list.h"
#include "proxy/reads/partial_object_metadata.h"
#include "tests/unit/cache/test_objects.h"
#include "tests/unit/cache/test_protobuf_objects.h"

using namespace proxy;
using cache::testing::makePod;

namespace {

// The whole body, gathered at most `max_slices` views at a time.
std::string drain(ListWriter& writer, size_t max_slices) {
  std::string body;
  std::vector<std::string_view> slices;
  while (writer.nextSlices(slices, max_slices)) {
    for (const std::string_view s : slices) body += s;
    slices.clear();
  }
  return body;
}

}  // namespace

TEST_CASE("A built-in list carries the envelope and items without kind/apiVersion (L1)") {
  ListEnvelope envelope{"PodList", "v1", 12500, "", std::nullopt};
  ListWriter writer(envelope, {makePod("default", "a", 10), makePod("default", "b", 11)}, ItemForm::WithoutTypeMeta);
  const std::string body = drain(writer, 1 << 20);
  CHECK(body ==
        R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"12500"},"items":[{"metadata":{"name":"a","namespace":"default","resourceVersion":"10","labels":{}},"spec":{"nodeName":""}},{"metadata":{"name":"b","namespace":"default","resourceVersion":"11","labels":{}},"spec":{"nodeName":""}}]})"
        "\n");
  CHECK(writer.totalSize() == body.size());
}

TEST_CASE("An empty list has items [] never null (L1)") {
  ListWriter writer({"PodList", "v1", 7, "", std::nullopt}, {}, ItemForm::WithoutTypeMeta);
  const std::string body = drain(writer, 16);
  CHECK(body == R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]})"
                 "\n");
  CHECK(writer.totalSize() == body.size());
}

TEST_CASE("Custom resource items keep their kind/apiVersion; continue and remainingItemCount follow the RV (L1, P1, P4)") {
  ListEnvelope envelope{"PodList", "v1", 5, "tok", 3};
  ListWriter writer(envelope, {makePod("ns", "a", 4)}, ItemForm::AsStored);
  const std::string body = drain(writer, 1);
  CHECK(body ==
        R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5","continue":"tok","remainingItemCount":3},"items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"4","labels":{}},"spec":{"nodeName":""}}]})"
        "\n");
  CHECK(writer.totalSize() == body.size());
}

TEST_CASE("A custom resource's JSON list is an UnstructuredList: sorted keys, continue always present (L1)") {
  ListEnvelope last{"WidgetList", "example.com/v1", 326, "", std::nullopt, true};
  ListWriter empty(last, {}, ItemForm::AsStored);
  const std::string empty_body = drain(empty, 1);
  CHECK(empty_body ==
        R"({"apiVersion":"example.com/v1","items":[],"kind":"WidgetList","metadata":{"continue":"","resourceVersion":"326"}})"
        "\n");
  CHECK(empty.totalSize() == empty_body.size());
  ListEnvelope paged{"WidgetList", "example.com/v1", 325, "tok", 1, true};
  ListWriter writer(paged, {makePod("ns", "a", 4)}, ItemForm::AsStored);
  std::vector<std::string_view> slices;
  std::string sliced;
  while (writer.nextSlices(slices, 4)) {
    for (auto s : slices) sliced += s;
    slices.clear();
  }
  CHECK(sliced.starts_with(R"({"apiVersion":"example.com/v1","items":[{"kind":"Pod")"));
  CHECK(sliced.ends_with(
      R"(}],"kind":"WidgetList","metadata":{"continue":"tok","remainingItemCount":1,"resourceVersion":"325"}})"
      "\n"));
  CHECK(writer.totalSize() == sliced.size());
}

TEST_CASE("PartialObjectMetadataList items hold the stored metadata bytes (N4)") {
  ListEnvelope envelope{"PartialObjectMetadataList", "meta.k8s.io/v1", 9, "", std::nullopt};
  ListWriter writer(envelope, {makePod("ns", "a", 4, {{"app", "web"}})}, ItemForm::PartialObjectMetadata);
  const std::string body = drain(writer, 1 << 20);
  CHECK(body ==
        R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"4","labels":{"app":"web"}}}]})"
        "\n");
  CHECK(writer.totalSize() == body.size());
  CHECK(partialObjectMetadata(*makePod("ns", "b", 4), false) ==
        R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"4","labels":{}}})"
        "\n");
}

TEST_CASE("An empty PartialObjectMetadataList has items null, however it is written (N4)") {
  const std::string expected =
      R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"276"},"items":null})"
      "\n";
  for (const ItemForm form : {ItemForm::PartialObjectMetadata, ItemForm::CustomPartialObjectMetadata}) {
    CAPTURE(static_cast<int>(form));
    ListEnvelope envelope{"PartialObjectMetadataList", "meta.k8s.io/v1", 276, "", std::nullopt};
    ListWriter copied(envelope, {}, form);
    CHECK(drain(copied, 1) == expected);
    CHECK(copied.totalSize() == expected.size());
    ListWriter sliced(envelope, {}, form);
    std::vector<std::string_view> slices;
    std::string body;
    while (sliced.nextSlices(slices, 4)) {
      for (const std::string_view s : slices) body += s;
      slices.clear();
    }
    CHECK(body == expected);
  }
  // Whatever else the envelope carries.
  ListWriter paged({"PartialObjectMetadataList", "meta.k8s.io/v1", 9, "tok", 0}, {}, ItemForm::PartialObjectMetadata);
  CHECK(drain(paged, 1 << 20) ==
        R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9","continue":"tok","remainingItemCount":0},"items":null})"
        "\n");
}

TEST_CASE("Custom resources' PartialObjectMetadataList items carry metadata in ObjectMeta order (N4)") {
  cache::ObjectMetaParser parser(cache::ParserOptions{});
  auto widget = parser.parseObject(
      R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"creationTimestamp":"2025-01-02T03:04:05Z","generation":1,"labels":{"app":"web"},"name":"w","namespace":"ns","resourceVersion":"8","uid":"u"},"spec":{}})");
  REQUIRE(widget.has_value());
  const std::string item =
      R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"w","namespace":"ns","uid":"u","resourceVersion":"8","generation":1,"creationTimestamp":"2025-01-02T03:04:05Z","labels":{"app":"web"}}})";
  ListWriter writer({"PartialObjectMetadataList", "meta.k8s.io/v1", 9, "", std::nullopt}, {*widget, *widget},
                    ItemForm::CustomPartialObjectMetadata);
  const std::string body = drain(writer, 1 << 20);
  CHECK(body == R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"items":[)" +
                    item + "," + item + "]}\n");
  CHECK(writer.totalSize() == body.size());
  CHECK(partialObjectMetadata(**widget, true) == item + "\n");
}

TEST_CASE("Slices of the stored bytes add up to the same body however many are taken at a time, in every item form (L1, N4)") {
  std::vector<cache::ObjectConstSharedPtr> items;
  for (int i = 0; i < 300; ++i) items.push_back(makePod("ns", "pod-" + std::to_string(i), 100 + i, {{"app", "web"}}));
  for (const ItemForm form : {ItemForm::AsStored, ItemForm::WithoutTypeMeta, ItemForm::PartialObjectMetadata,
                              ItemForm::CustomPartialObjectMetadata}) {
    for (const size_t max_slices : {size_t{1}, size_t{4}, size_t{7}, size_t{1024}}) {
      CAPTURE(static_cast<int>(form));
      CAPTURE(max_slices);
      ListWriter copied({"PodList", "v1", 2000, "tok", 5}, items, form);
      ListWriter sliced({"PodList", "v1", 2000, "tok", 5}, items, form);
      std::vector<std::string_view> slices;
      std::string body;
      int calls = 0;
      while (sliced.nextSlices(slices, max_slices)) {
        CHECK(slices.size() <= std::max<size_t>(max_slices, 4));
        for (const std::string_view s : slices) body += s;
        slices.clear();
        ++calls;
      }
      CHECK(slices.empty());
      CHECK(body == drain(copied, 1 << 30));
      CHECK(body.size() == sliced.totalSize());
      if (max_slices < 1024) CHECK(calls > 10);
    }
  }
  ListWriter empty({"PodList", "v1", 7, "", std::nullopt}, {}, ItemForm::WithoutTypeMeta);
  std::vector<std::string_view> slices;
  std::string body;
  while (empty.nextSlices(slices, 4)) {
    for (const std::string_view s : slices) body += s;
    slices.clear();
  }
  CHECK(body == R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]})"
                 "\n");
}

namespace {

using cache::testing::makeProtobufPod;


}  // namespace

TEST_CASE("N2: a protobuf list from the cache is the List the apiserver writes, in pieces or gathered") {
  const std::vector<cache::ObjectConstSharedPtr> items{makeProtobufPod("a", "10"), makeProtobufPod("b", "11"),
                                                       makeProtobufPod("c", "12")};
  std::vector<std::string_view> raw;
  for (const auto& item : items) raw.push_back(item->plainBytes());
  std::string expected;  // appendList is checked byte for byte against kube-apiserver (real-cluster tier)
  cache::protobuf::appendList(expected, "v1", "PodList", {"", "12500", "tok", 4}, raw);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{1} << 20}) {
    ListWriter writer({"PodList", "v1", 12500, "tok", 4}, items, ItemForm::Protobuf);
    CHECK(writer.totalSize() == expected.size());
    CHECK(drain(writer, piece) == expected);
  }
  ListWriter gathered({"PodList", "v1", 12500, "tok", 4}, items, ItemForm::Protobuf);
  CHECK(drain(gathered, 4) == expected);

  // PartialObjectMetadataList: each item {1: the stored ObjectMeta}.
  // Each item {1: the stored ObjectMeta}: tag 0a, a one-byte length (these are short).
  std::vector<std::string> partial;
  for (const auto& item : items) {
    const std::string meta = cache::testing::metadataOf(*item);
    partial.push_back("\x0a" + std::string(1, static_cast<char>(meta.size())) + std::string(meta));
  }
  std::string expected_partial;
  cache::protobuf::appendList(expected_partial, "meta.k8s.io/v1", "PartialObjectMetadataList",
                              {"", "12500", "", std::nullopt}, std::vector<std::string_view>(partial.begin(), partial.end()));
  ListWriter metadata({"PartialObjectMetadataList", "meta.k8s.io/v1", 12500, "", std::nullopt}, items,
                      ItemForm::ProtobufPartialObjectMetadata);
  CHECK(metadata.totalSize() == expected_partial.size());
  CHECK(drain(metadata, 64) == expected_partial);

  // Empty: no items field at all.
  ListWriter empty({"PodList", "v1", 7, "", std::nullopt}, {}, ItemForm::Protobuf);
  std::string expected_empty;
  cache::protobuf::appendList(expected_empty, "v1", "PodList", {"", "7", "", std::nullopt}, {});
  CHECK(drain(empty, 3) == expected_empty);
}
