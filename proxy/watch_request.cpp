#include "proxy/watch_request.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace proxy {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// One media range of an Accept header, with the parameters a watch cares about.
struct MediaRange {
  std::string_view type;
  double q = 1.0;
  std::string_view as, g, v;
};

std::vector<MediaRange> mediaRanges(std::string_view accept) {
  std::vector<MediaRange> ranges;
  size_t pos = 0;
  while (pos <= accept.size()) {
    size_t comma = accept.find(',', pos);
    if (comma == std::string_view::npos) comma = accept.size();
    std::string_view text = trim(accept.substr(pos, comma - pos));
    pos = comma + 1;
    if (text.empty()) continue;
    const size_t semi = text.find(';');
    MediaRange range{trim(text.substr(0, semi))};
    std::string_view params = semi == std::string_view::npos ? std::string_view{} : text.substr(semi + 1);
    while (!params.empty()) {
      const size_t next = params.find(';');
      const std::string_view param = trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view{} : params.substr(next + 1);
      const size_t eq = param.find('=');
      const std::string_view key = trim(param.substr(0, eq));
      const std::string_view value = eq == std::string_view::npos ? std::string_view{} : trim(param.substr(eq + 1));
      if (iequals(key, "q")) range.q = std::atof(std::string(value).c_str());
      if (iequals(key, "as")) range.as = value;
      if (iequals(key, "g")) range.g = value;
      if (iequals(key, "v")) range.v = value;
    }
    ranges.push_back(range);
  }
  return ranges;
}

bool isJson(std::string_view type) {
  return iequals(type, "application/json") || iequals(type, "*/*") || iequals(type, "application/*");
}

}  // namespace

bool acceptsJsonWatch(std::string_view accept) {
  accept = trim(accept);
  if (accept.empty()) return true;
  bool json = false;
  for (const MediaRange& range : mediaRanges(accept)) {
    // A transformed object (Table, PartialObjectMetadata) is rendered upstream.
    if (!range.as.empty()) return false;
    json = json || isJson(range.type);
  }
  return json;
}

std::optional<WatchMedia> watchMedia(std::string_view accept) {
  accept = trim(accept);
  if (accept.empty()) return WatchMedia{};
  std::vector<MediaRange> ranges = mediaRanges(accept);
  std::stable_sort(ranges.begin(), ranges.end(), [](const MediaRange& a, const MediaRange& b) { return a.q > b.q; });
  for (const MediaRange& range : ranges) {
    if (range.q <= 0) continue;
    const bool protobuf = iequals(range.type, "application/vnd.kubernetes.protobuf");
    if (!protobuf && !isJson(range.type)) continue;
    const bool transform = !range.as.empty() || !range.g.empty() || !range.v.empty();
    if (!transform) return WatchMedia{protobuf ? cache::Encoding::Protobuf : cache::Encoding::Json, false};
    if (protobuf && range.as == "PartialObjectMetadata" && range.g == "meta.k8s.io" && range.v == "v1") {
      return WatchMedia{cache::Encoding::Protobuf, true};
    }
    return std::nullopt;
  }
  return std::nullopt;
}

cache::Status expiredStatus(const std::string& message) { return {cache::Reason::Expired, message}; }

std::optional<int64_t> goWatchTimeoutNanos(std::optional<int64_t> timeout_seconds) {
  if (!timeout_seconds) return std::nullopt;
  // Unsigned arithmetic wraps as Go's int64 multiplication does, without C++'s UB.
  return static_cast<int64_t>(static_cast<uint64_t>(*timeout_seconds) * uint64_t{1000000000});
}

std::variant<WatchPlan, HttpAnswer> planWatch(std::string_view raw_query, std::string_view namespace_name,
                                              const watch::ApiResource& resource,
                                              std::chrono::milliseconds max_lifetime, double random_unit,
                                              bool watch_prefix) {
  static const auto kNoFields = std::make_shared<const cache::FieldSpec>();
  const cache::FieldSpec& spec = resource.field_spec ? *resource.field_spec : *kNoFields;
  // The WatchList gate is on (1.34+): legacy RV unset/0 watches become watch-lists (W4).
  auto parsed = cache::ListOptions::parse(raw_query, spec,
                                          cache::ListOptionsConfig{.watch_list_enabled = true, .force_watch = watch_prefix});
  if (!parsed) return toHttpAnswer(parsed.error());
  cache::ListOptions options = std::move(parsed).value();

  WatchPlan plan;
  plan.allow_bookmarks = options.allow_watch_bookmarks;
  const bool rv_given = options.parsed_resource_version && !options.parsed_resource_version->isZero();
  const bool send_initial = options.send_initial_events.value_or(false);
  if (send_initial) {
    plan.start = WatchPlan::Start::Snapshot;
    plan.initial_events_end = plan.allow_bookmarks;
    if (rv_given) plan.wait_for_rv = options.parsed_resource_version->value();
  } else if (rv_given) {
    plan.start = WatchPlan::Start::Resume;
    plan.from_rv = options.parsed_resource_version->value();
  } else if (!options.send_initial_events) {
    // Not defaulted to a watch-list (the /watch/ path without ?watch=true): the legacy
    // RV unset/0 watch, the current state as ADDED events without an end bookmark (W4).
    plan.start = WatchPlan::Start::Snapshot;
  } else {
    plan.start = WatchPlan::Start::Now;
  }
  // RV "0" means "any state" and N is waited for above; only an absent RV asks for the
  // current one (W4, W9 "RV unset: fetch current etcd revision X, wait until cache >= X").
  plan.consistent = !options.parsed_resource_version.has_value() && plan.start != WatchPlan::Start::Resume;

  // W8: a positive timeout is honoured as given, as the apiserver does; absent or 0 gets a
  // random lifetime in [max/2, max) so that clients do not reconnect in lockstep; a
  // negative one has expired already.
  plan.lifetime = std::chrono::milliseconds(
      max_lifetime.count() / 2 + static_cast<int64_t>(random_unit * static_cast<double>(max_lifetime.count() / 2)));
  const int64_t timeout_ns = goWatchTimeoutNanos(options.timeout_seconds).value_or(0);
  if (timeout_ns < 0) plan.ends_at_once = true;
  if (timeout_ns > 0) {
    // Capped at a century so that the deadline stays within the clock's range.
    constexpr std::chrono::milliseconds kCentury = std::chrono::hours(24 * 365 * 100);
    plan.lifetime = std::min(std::chrono::ceil<std::chrono::milliseconds>(std::chrono::nanoseconds(timeout_ns)), kCentury);
  }
  plan.filter = watch::WatchFilter(std::string(namespace_name), std::move(options.label_selector),
                                   std::move(options.field_selector));
  return plan;
}

}  // namespace proxy
