#include "proxy/list_writer.h"

#include <doctest/doctest.h>

#include "tests/unit/cache/test_objects.h"

using namespace proxy;
using cache::testing::makePod;

namespace {

std::string drain(ListWriter& writer, size_t piece_bytes) {
  std::string body, piece;
  while (writer.next(piece, piece_bytes)) body += piece;
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

TEST_CASE("PartialObjectMetadataList items hold the stored metadata bytes (N4)") {
  ListEnvelope envelope{"PartialObjectMetadataList", "meta.k8s.io/v1", 9, "", std::nullopt};
  ListWriter writer(envelope, {makePod("ns", "a", 4, {{"app", "web"}})}, ItemForm::PartialObjectMetadata);
  const std::string body = drain(writer, 1 << 20);
  CHECK(body ==
        R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"4","labels":{"app":"web"}}}]})"
        "\n");
  CHECK(writer.totalSize() == body.size());
  CHECK(partialObjectMetadata(*makePod("ns", "b", 4)) ==
        R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"4","labels":{}}})"
        "\n");
}

TEST_CASE("A large list is written in pieces that add up to the whole body") {
  std::vector<cache::ObjectConstSharedPtr> items;
  for (int i = 0; i < 1000; ++i) items.push_back(makePod("ns", "pod-" + std::to_string(i), 100 + i));
  ListWriter whole({"PodList", "v1", 2000, "", std::nullopt}, items, ItemForm::WithoutTypeMeta);
  ListWriter pieces({"PodList", "v1", 2000, "", std::nullopt}, items, ItemForm::WithoutTypeMeta);
  std::string piece, body;
  int count = 0;
  while (pieces.next(piece, 4096)) {
    body += piece;
    ++count;
  }
  CHECK(count > 10);
  CHECK(body == drain(whole, 1 << 30));
  CHECK(body.size() == pieces.totalSize());
}
