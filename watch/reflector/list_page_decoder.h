#pragma once
// Splits one LIST response page ({"kind":"...List","metadata":{...},"items":[...]}) into
// the raw bytes of each item, the list resourceVersion and the continue token, without
// re-serializing anything (contract P, L).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace watch {

struct ListPage {
  std::vector<std::string> items;  // raw JSON (or protobuf message) of each item, as upstream sent it
  uint64_t resource_version = 0;   // metadata.resourceVersion of the list
  std::string continue_token;      // metadata.continue; empty on the last page
  // metadata.remainingItemCount: items after this page (P4), when the upstream says.
  std::optional<uint64_t> remaining_item_count;
};

struct ListPageResult {
  std::optional<ListPage> page;
  std::string error;
};

// Takes the body by value: simdjson needs padding after the input, which is added in
// place instead of copying a possibly large body.
ListPageResult decodeListPage(std::string body);
// A protobuf List body (N2): items are each item's bare message.
ListPageResult decodeProtobufListPage(std::string_view body);

}  // namespace watch
