// One upstream LIST page through both readers: the store's ObjectMetaParser::parseList
// and the reflector's decodeListPage. Neither may crash; every item the store accepts
// keeps the object invariants, and when both accept a page they agree on its
// resourceVersion, continue token and item count (contract L, P).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "object_checks.h"
#include "watch/reflector/list_page_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static cache::ObjectMetaParser parser(fuzz::customOptions());

  auto list = parser.parseList(input);
  if (list) {
    for (const auto& item : list->items) {
      FUZZ_CHECK(item != nullptr);
      fuzz::checkObject(parser, *item, input);
    }
    if (input.find('\\') == std::string_view::npos) FUZZ_CHECK(input.find(list->continue_token) != std::string_view::npos);
  } else {
    FUZZ_CHECK(!list.error().message.empty());
  }

  const watch::ListPageResult page = watch::decodeListPage(std::string(input));
  if (!page.page) {
    FUZZ_CHECK(!page.error.empty());
    return 0;
  }
  for (const std::string& item : page.page->items) {
    FUZZ_CHECK(item.starts_with('{') && item.ends_with('}'));
    FUZZ_CHECK(input.find(item) != std::string_view::npos);
  }
  if (list && input.find('\\') == std::string_view::npos) {
    FUZZ_CHECK(list->resource_version == page.page->resource_version);
    FUZZ_CHECK(list->continue_token == page.page->continue_token);
    FUZZ_CHECK(list->items.size() == page.page->items.size());
  }
  return 0;
}
