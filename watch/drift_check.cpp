#include "watch/drift_check.h"

#include <map>
#include <utility>

#include "cache/object_meta_parser.h"

namespace watch {
namespace {

constexpr const char* kMetadataListAccept =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

DriftReport unavailable(uint64_t rv, std::string error) {
  DriftReport report;
  report.outcome = DriftReport::Outcome::Unavailable;
  report.resource_version = rv;
  report.error = std::move(error);
  return report;
}

}  // namespace

DriftReport checkDrift(ListerWatcher& upstream, const cache::ThreadSafeStore& store, const DriftCheckOptions& options,
                       std::stop_token stop) {
  const cache::SnapshotConstSharedPtr snapshot = store.snapshot();
  const uint64_t rv = snapshot->resourceVersion();
  if (rv == 0) return unavailable(rv, "the cache has no state yet");

  ListOptions opts;
  opts.resource_version = std::to_string(rv);
  opts.resource_version_match = "Exact";
  opts.limit = options.page_size;
  opts.label_selector = options.label_selector;
  opts.field_selector = options.field_selector;
  opts.accept = kMetadataListAccept;
  cache::ObjectMetaParser parser(cache::ParserOptions{});
  std::map<std::string, uint64_t, std::less<>> upstream_rvs;
  while (true) {
    ListResponse response = upstream.list(opts, stop);
    if (stop.stop_requested()) return unavailable(rv, "stopped");
    if (response.status == 0) return unavailable(rv, response.transport_error);
    if (response.status != 200) {
      return unavailable(rv, "LIST at resourceVersion " + opts.resource_version + " answered HTTP " +
                                 std::to_string(response.status));
    }
    auto page = parser.parseList(std::string_view(response.body));
    if (!page) return unavailable(rv, "malformed list: " + page.error().message);
    for (const auto& item : page->items) upstream_rvs.emplace(item->key(), item->resourceVersion());
    if (page->continue_token.empty()) break;
    opts.continue_token = std::move(page->continue_token);
  }

  DriftReport report;
  report.resource_version = rv;
  auto note = [&](const std::string& key, uint64_t cached, uint64_t listed) {
    ++report.differences;
    if (report.keys.size() >= options.max_reported_keys) return;
    auto rvText = [](uint64_t v) { return v == 0 ? std::string("none") : std::to_string(v); };
    report.keys.push_back(key + " (cache " + rvText(cached) + ", upstream " + rvText(listed) + ")");
  };
  snapshot->forEach([&](const cache::ObjectConstSharedPtr& object) {
    auto it = upstream_rvs.find(object->key());
    if (it == upstream_rvs.end()) {
      note(object->key(), object->resourceVersion(), 0);
    } else {
      if (it->second != object->resourceVersion()) note(object->key(), object->resourceVersion(), it->second);
      upstream_rvs.erase(it);
    }
    return true;
  });
  for (const auto& [key, listed] : upstream_rvs) note(key, 0, listed);
  report.outcome = report.differences == 0 ? DriftReport::Outcome::Same : DriftReport::Outcome::Differs;
  return report;
}

}  // namespace watch
