#include "proxy/watches/watch_request.h"

#include <algorithm>
#include <charconv>
#include <string>

#include <fmt/format.h>

#include "cache/query/query_values.h"

namespace proxy {
namespace {

// goautoneg compares media types case-sensitively, and so does the apiserver.
bool isJson(const MediaRange& range) {
  return range.is("application", "json") || range.is("*", "*") || range.is("application", "*");
}

bool transforms(const MediaRange& range) { return range.param("as") || range.param("g") || range.param("v"); }

}  // namespace

bool acceptsJsonWatch(const AcceptHeader& accept) {
  if (accept.empty()) return true;
  bool json = false;
  for (const MediaRange& range : accept.ranges()) {
    // A transformed object (Table, PartialObjectMetadata) is rendered upstream.
    if (const std::string* as = range.param("as"); as && !as->empty()) return false;
    json = json || isJson(range);
  }
  return json;
}

std::optional<WatchMedia> watchMedia(const AcceptHeader& accept) {
  if (accept.empty()) return WatchMedia{};
  for (const MediaRange* range : accept.byQuality()) {
    if (range->q <= 0) continue;
    const bool protobuf = range->is("application", "vnd.kubernetes.protobuf");
    if (!protobuf && !isJson(*range)) continue;
    if (!transforms(*range)) return WatchMedia{protobuf ? cache::Encoding::Protobuf : cache::Encoding::Json, false};
    const std::string* as = range->param("as");
    const std::string* g = range->param("g");
    const std::string* v = range->param("v");
    if (protobuf && as && *as == "PartialObjectMetadata" && g && *g == "meta.k8s.io" && v && *v == "v1") {
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

std::optional<std::string> cappedWatchTarget(std::string_view target, const cache::QueryValues& query,
                                             std::chrono::seconds cap) {
  if (cap.count() <= 0) return std::nullopt;
  if (const auto given = query.get("timeoutSeconds")) {
    // As Go's strconv.ParseInt: an optional sign, then decimal digits.
    std::string_view digits = *given;
    if (digits.size() > 1 && digits[0] == '+') digits.remove_prefix(1);
    int64_t seconds = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seconds);
    if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;  // 400 upstream
    const int64_t nanos = *goWatchTimeoutNanos(seconds);
    if (nanos < 0 || (nanos > 0 && seconds <= cap.count())) return std::nullopt;
  }
  const size_t qmark = target.find('?');
  std::string out(target.substr(0, qmark));
  out += '?';
  std::string_view rest = qmark == std::string_view::npos ? std::string_view{} : target.substr(qmark + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    if (cache::queryUnescape(pair.substr(0, pair.find('='))) == "timeoutSeconds") continue;
    out.append(pair);
    out += '&';
  }
  out += "timeoutSeconds=" + std::to_string(cap.count());
  return out;
}

std::variant<WatchPlan, HttpAnswer> planWatch(const cache::QueryValues& query, std::string_view namespace_name,
                                              const watch::ApiResource& resource,
                                              std::chrono::milliseconds max_lifetime, double random_unit,
                                              bool watch_prefix, bool shards_apply) {
  static const auto kNoFields = std::make_shared<const cache::FieldSpec>();
  const cache::FieldSpec& spec = resource.field_spec ? *resource.field_spec : *kNoFields;
  // The WatchList gate is on (1.34+): legacy RV unset/0 watches become watch-lists (W4).
  auto parsed = cache::ListOptions::parse(query, spec,
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
  if (!shards_apply) options.ignoreShardSelector();
  plan.filter = watch::WatchFilter(std::string(namespace_name), std::move(options.label_selector),
                                   std::move(options.field_selector), std::move(options.shard_selector));
  return plan;
}

}  // namespace proxy
