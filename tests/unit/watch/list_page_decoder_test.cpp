#include <doctest/doctest.h>

#include "upstream_json.h"
#include "watch/reflector/list_page_decoder.h"

using namespace watch;
using namespace watch::testing;

TEST_CASE("A list page yields each item's raw bytes, the list RV and the continue token") {
  const std::vector<std::string> items = {pod("a", 5), pod("b", 9)};
  auto result = decodeListPage(listBody(items, 20, "tok-1"));
  REQUIRE(result.page);
  CHECK(result.page->items == items);
  CHECK(result.page->resource_version == 20);
  CHECK(result.page->continue_token == "tok-1");
}

TEST_CASE("An empty list page may carry items as [] or null") {
  auto empty = decodeListPage(listBody({}, 7));
  REQUIRE(empty.page);
  CHECK(empty.page->items.empty());
  CHECK(empty.page->continue_token.empty());

  auto null_items = decodeListPage(R"({"kind":"PodList","metadata":{"resourceVersion":"8"},"items":null})");
  REQUIRE(null_items.page);
  CHECK(null_items.page->items.empty());
  CHECK(null_items.page->resource_version == 8);
}

TEST_CASE("A list page without a resourceVersion or with broken items is rejected") {
  CHECK_FALSE(decodeListPage(R"({"kind":"PodList","metadata":{},"items":[]})").page);
  CHECK_FALSE(decodeListPage(R"({"metadata":{"resourceVersion":"1"},"items":[1,2]})").page);
  CHECK_FALSE(decodeListPage("{").page);
  // Mismatched brackets inside an item (found by fuzzing: simdjson skips by depth alone).
  CHECK_FALSE(decodeListPage(R"({"metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"}]]})").page);
}

TEST_CASE("P4: a page's remainingItemCount is read for sync progress; a bad one is left out") {
  auto page = decodeListPage(
      R"({"kind":"PodList","metadata":{"resourceVersion":"8","continue":"c","remainingItemCount":99500},"items":[]})");
  REQUIRE(page.page);
  CHECK(page.page->remaining_item_count == std::optional<uint64_t>(99500));
  auto last = decodeListPage(R"({"kind":"PodList","metadata":{"resourceVersion":"8"},"items":[]})");
  REQUIRE(last.page);
  CHECK_FALSE(last.page->remaining_item_count);
  auto odd = decodeListPage(R"({"kind":"PodList","metadata":{"resourceVersion":"8","remainingItemCount":"x"},"items":[]})");
  REQUIRE(odd.page);
  CHECK_FALSE(odd.page->remaining_item_count);
}
