// Gzip'd LISTs that take whole chunks from their CompressedRuns (N1): the same body as
// the plain list, in every item form, with runs made once per chunk.
#include <doctest/doctest.h>

#include "cache/chunked_object_map.h"
#include "cache/snapshot.h"
#include "proxy/http/gzip_writer.h"
#include "proxy/reads/list_writer.h"
#include "tests/unit/cache/test_objects.h"
#include "tests/unit/cache/test_protobuf_objects.h"
#include "tests/unit/proxy/gunzip.h"

using namespace proxy;
using cache::testing::makePod;
using proxy::testing::gunzip;

namespace {

cache::Snapshot snapshotOf(int pods_per_namespace) {
  cache::ChunkedObjectMap map;
  for (const char* ns : {"a", "b", "c"}) {
    for (int i = 0; i < pods_per_namespace; ++i) {
      const std::string app = i % 3 == 0 ? "db" : "web";
      (void)map.upsert(makePod(ns, "pod-" + std::to_string(i), 100 + i, {{"app", app}}), 1, 0);
    }
  }
  return cache::Snapshot(2000, map.chunks());
}

std::string plainBody(const cache::ListPage& page, ItemForm form) {
  ListWriter writer({"PodList", "v1", 2000, "", std::nullopt}, page.items, form);
  std::string body;
  std::vector<std::string_view> slices;
  while (writer.nextSlices(slices, 1024)) {
    for (const std::string_view s : slices) body += s;
    slices.clear();
  }
  return body;
}

std::string gzipBody(const cache::ListPage& page, ItemForm form, size_t piece_bytes, int* pieces = nullptr) {
  ListWriter writer({"PodList", "v1", 2000, "", std::nullopt}, page.items, form, page.whole_chunks);
  GzipWriter gz;
  std::string body, piece;
  while (writer.nextGzip(gz, piece, piece_bytes)) {
    body += piece;
    if (pieces) ++*pieces;
  }
  return body;
}

}  // namespace

TEST_CASE("A LIST's whole chunks are named, in item order; a namespace's edges and filtered chunks are not") {
  const cache::Snapshot snapshot = snapshotOf(1000);
  const cache::ListPage all = snapshot.list({});
  REQUIRE(all.items.size() == 3000);
  CHECK(all.whole_chunks.size() == snapshot.chunkCount());
  size_t covered = 0;
  for (const auto& run : all.whole_chunks) {
    CHECK(run.first_item == covered);
    for (size_t i = 0; i < run.chunk->objects.size(); ++i) CHECK(all.items[run.first_item + i] == run.chunk->objects[i]);
    covered += run.chunk->objects.size();
  }
  CHECK(covered == all.items.size());

  cache::ListRequest namespaced;
  namespaced.namespace_name = "b";
  const cache::ListPage b = snapshot.list(namespaced);
  CHECK(b.items.size() == 1000);
  CHECK(!b.whole_chunks.empty());
  CHECK(b.whole_chunks.size() < snapshot.chunkCount());
  for (const auto& run : b.whole_chunks) CHECK(run.chunk->objects.front()->meta().namespace_name == "b");

  cache::ListRequest selected;
  selected.predicate = [](const cache::Object& o) { return o.key() != "b/pod-500"; };
  CHECK(snapshot.list(selected).whole_chunks.size() == all.whole_chunks.size() - 1);

  cache::ListRequest page;
  page.limit = 300;
  const cache::ListPage first = snapshot.list(page);
  for (const auto& run : first.whole_chunks) CHECK(run.first_item + run.chunk->objects.size() <= 300);
}

TEST_CASE("A gzip'd LIST inflates to the plain LIST in every item form, whole chunks or not (N1, L1, N2, N4)") {
  const cache::Snapshot snapshot = snapshotOf(700);
  cache::ListRequest namespaced;
  namespaced.namespace_name = "b";
  cache::ListRequest selected;
  selected.predicate = [](const cache::Object& o) { return o.meta().labels.size() == 1 && o.meta().name != "pod-7"; };
  for (const ItemForm form : {ItemForm::AsStored, ItemForm::WithoutTypeMeta, ItemForm::PartialObjectMetadata,
                              ItemForm::CustomPartialObjectMetadata}) {
    for (const cache::ListRequest* request : std::vector<const cache::ListRequest*>{nullptr, &namespaced, &selected}) {
      const cache::ListPage page = request ? snapshot.list(*request) : snapshot.list({});
      CAPTURE(static_cast<int>(form));
      CAPTURE(page.whole_chunks.size());
      const std::string plain = plainBody(page, form);
      CHECK(gunzip(gzipBody(page, form, 256 * 1024)) == plain);
      int pieces = 0;
      CHECK(gunzip(gzipBody(page, form, 100, &pieces)) == plain);  // again, now from kept runs
      CHECK(pieces > static_cast<int>(page.whole_chunks.size()));  // a run is at most one piece
    }
  }
  const cache::ListPage empty = snapshot.list({.namespace_name = "none"});
  CHECK(gunzip(gzipBody(empty, ItemForm::WithoutTypeMeta, 1 << 20)) == plainBody(empty, ItemForm::WithoutTypeMeta));
}

TEST_CASE("A gzip'd protobuf LIST and PartialObjectMetadataList inflate to the plain ones (N1, N2, N4)") {
  cache::ChunkedObjectMap map;
  for (int i = 0; i < 700; ++i) {
    (void)map.upsert(cache::testing::makeProtobufPod("pod-" + std::to_string(i), std::to_string(100 + i)), 1, 0);
  }
  const cache::Snapshot snapshot(2000, map.chunks());
  cache::ListRequest selected;
  selected.predicate = [](const cache::Object& o) { return o.meta().name != "pod-300"; };
  for (const ItemForm form : {ItemForm::Protobuf, ItemForm::ProtobufPartialObjectMetadata}) {
    for (const cache::ListPage& page : {snapshot.list({}), snapshot.list(selected)}) {
      CAPTURE(static_cast<int>(form));
      REQUIRE(!page.whole_chunks.empty());
      CHECK(gunzip(gzipBody(page, form, 4096)) == plainBody(page, form));
      CHECK(gunzip(gzipBody(page, form, 4096)) == plainBody(page, form));
    }
  }
}

TEST_CASE("A chunk's run is deflated once and shared by later LISTs until the chunk changes") {
  cache::ChunkedObjectMap map;
  for (int i = 0; i < 500; ++i) (void)map.upsert(makePod("a", "pod-" + std::to_string(i), 100 + i), 1, 0);
  const cache::Snapshot first(2000, map.chunks());
  const cache::ListPage page = first.list({});
  REQUIRE(!page.whole_chunks.empty());
  const auto& chunk = *page.whole_chunks.front().chunk;
  CHECK(chunk.compressed.bytes() == 0);
  const uint64_t all_before = cache::compressedRunBytes();
  (void)gzipBody(page, ItemForm::WithoutTypeMeta, 1 << 20);
  CHECK(chunk.compressed.bytes() > 0);
  size_t kept_bytes = 0;
  for (const auto& run : page.whole_chunks) kept_bytes += run.chunk->compressed.bytes();
  CHECK(cache::compressedRunBytes() == all_before + kept_bytes);  // the metric counts them
  const auto kept = chunk.compressed.getOrMake(static_cast<size_t>(ItemForm::WithoutTypeMeta), []() {
    FAIL("made again");
    return cache::CompressedRunConstSharedPtr{};
  });
  REQUIRE(kept);
  CHECK(chunk.compressed.getOrMake(static_cast<size_t>(ItemForm::AsStored), [] {
    return std::make_shared<const cache::CompressedRun>();
  }) != kept);  // another form has its own slot

  // A write after the snapshot copies the chunk: the copy starts without runs, and the
  // snapshot's chunk keeps its own.
  (void)map.upsert(makePod("a", "pod-0", 9999), 2, 1);
  const cache::Snapshot second(2001, map.chunks());
  const cache::ListPage changed = second.list({});
  CHECK(changed.whole_chunks.front().chunk.get() != &chunk);
  CHECK(changed.whole_chunks.front().chunk->compressed.bytes() == 0);
  CHECK(chunk.compressed.bytes() > 0);
  CHECK(gunzip(gzipBody(changed, ItemForm::WithoutTypeMeta, 1 << 20)) == plainBody(changed, ItemForm::WithoutTypeMeta));
}

TEST_CASE("Runs leave the memory gauge with their chunk") {
  const uint64_t all_before = cache::compressedRunBytes();
  {
    const cache::Snapshot snapshot = snapshotOf(300);
    (void)gzipBody(snapshot.list({}), ItemForm::AsStored, 1 << 20);
    CHECK(cache::compressedRunBytes() > all_before);
  }
  CHECK(cache::compressedRunBytes() == all_before);
}
