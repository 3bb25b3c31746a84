#include <doctest/doctest.h>

#include "proxy/watches/watch_request.h"

using proxy::HttpAnswer;
using proxy::WatchPlan;

namespace {

bool acceptsJsonWatch(std::string_view accept) { return proxy::acceptsJsonWatch(proxy::AcceptHeader::parse(accept)); }
std::optional<proxy::WatchMedia> watchMedia(std::string_view accept) {
  return watchMedia(proxy::AcceptHeader::parse(accept));
}

watch::ApiResource pods() {
  watch::ApiResource r{"", "v1", "pods", "Pod", "PodList", true, {}, false, nullptr};
  r.field_spec = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  return r;
}

std::variant<WatchPlan, HttpAnswer> plan(std::string_view query) {
  return proxy::planWatch(cache::QueryValues::parse(query), "default", pods(), std::chrono::milliseconds(3600000), 0.5);
}

}  // namespace

TEST_CASE("Watches asking for Table or PartialObjectMetadata pass through; JSON and protobuf-with-JSON are served (N1, N3, N4)") {
  CHECK(acceptsJsonWatch(""));
  CHECK(acceptsJsonWatch("*/*"));
  CHECK(acceptsJsonWatch("application/json, */*"));
  CHECK(acceptsJsonWatch("application/vnd.kubernetes.protobuf, application/json"));
  CHECK_FALSE(acceptsJsonWatch("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"));
  CHECK_FALSE(acceptsJsonWatch("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"));
  CHECK_FALSE(acceptsJsonWatch("application/vnd.kubernetes.protobuf"));
  CHECK_FALSE(acceptsJsonWatch("application/yaml"));
}

TEST_CASE("A legacy watch without RV is defaulted to a watch-list that ends with the marker bookmark when bookmarks are allowed (W4, W9)") {
  auto p = std::get<WatchPlan>(plan("watch=1&allowWatchBookmarks=true"));
  CHECK(p.start == WatchPlan::Start::Snapshot);
  CHECK(p.initial_events_end);
  auto rv0 = std::get<WatchPlan>(plan("watch=1&resourceVersion=0"));
  CHECK(rv0.start == WatchPlan::Start::Snapshot);
  CHECK_FALSE(rv0.initial_events_end);
}

TEST_CASE("RV=N resumes from history; sendInitialEvents with RV=N waits for the cache (W4, W9)") {
  auto p = std::get<WatchPlan>(plan("watch=true&resourceVersion=120&allowWatchBookmarks=True"));
  CHECK(p.start == WatchPlan::Start::Resume);
  CHECK(p.from_rv == 120);
  CHECK(p.allow_bookmarks);
  auto wl = std::get<WatchPlan>(
      plan("watch=true&resourceVersion=120&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"));
  CHECK(wl.start == WatchPlan::Start::Snapshot);
  CHECK(wl.wait_for_rv == 120u);
  CHECK(wl.initial_events_end);
  auto none = std::get<WatchPlan>(plan("watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan"));
  CHECK(none.start == WatchPlan::Start::Now);
}

TEST_CASE("Only watches without an RV must first prove the cache is as new as a quorum read (W4, W9, C1)") {
  CHECK(std::get<WatchPlan>(plan("watch=1")).consistent);
  CHECK(std::get<WatchPlan>(plan("watch=1&allowWatchBookmarks=true")).consistent);
  CHECK(std::get<WatchPlan>(
            plan("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"))
            .consistent);
  CHECK(std::get<WatchPlan>(plan("watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan")).consistent);
  CHECK_FALSE(std::get<WatchPlan>(plan("watch=1&resourceVersion=0")).consistent);
  CHECK_FALSE(std::get<WatchPlan>(plan("watch=1&resourceVersion=0&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"))
                  .consistent);
  CHECK_FALSE(std::get<WatchPlan>(plan("watch=1&resourceVersion=120")).consistent);
}

TEST_CASE("Invalid watch-list combinations get the apiserver's 422 before streaming (R4, W9)") {
  auto a = std::get<HttpAnswer>(plan("watch=true&sendInitialEvents=true"));
  CHECK(a.code == 422);
  CHECK(a.body ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan","reason":"Invalid","details":{"group":"meta.k8s.io","kind":"ListOptions","causes":[{"reason":"FieldValueForbidden","message":"Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan","field":"resourceVersionMatch"}]},"code":422})"
        "\n");
  auto bad_selector = std::get<HttpAnswer>(plan("watch=true&labelSelector=a%20b"));
  CHECK(bad_selector.code == 400);
  auto bad_rv = std::get<HttpAnswer>(plan("watch=true&resourceVersion=abc"));
  CHECK(bad_rv.code == 500);
  CHECK(bad_rv.body.find(R"("reason")") == std::string::npos);
}

TEST_CASE("timeoutSeconds is honoured as given; without it the lifetime is randomized (W8)") {
  CHECK(std::get<WatchPlan>(plan("watch=1&resourceVersion=5&timeoutSeconds=7")).lifetime == std::chrono::seconds(7));
  // No timeout: random in [max/2, max); 0.5 -> 2700 s with the default 3600 s maximum.
  CHECK(std::get<WatchPlan>(plan("watch=1&resourceVersion=5")).lifetime == std::chrono::seconds(2700));
  CHECK(std::get<WatchPlan>(plan("watch=1&resourceVersion=5&timeoutSeconds=7200")).lifetime ==
        std::chrono::seconds(7200));
}

TEST_CASE("timeoutSeconds below zero, or wrapping below zero in Go's Duration arithmetic, ends the watch at once (W8)") {
  CHECK(std::get<WatchPlan>(plan("watch=1&timeoutSeconds=-1")).ends_at_once);
  // 9223372036854775807 s * 1e9 wraps to -1 s in int64 nanoseconds.
  CHECK(std::get<WatchPlan>(plan("watch=1&timeoutSeconds=9223372036854775807")).ends_at_once);
  CHECK(std::get<WatchPlan>(plan("watch=1&timeoutSeconds=9223372037")).ends_at_once);
  CHECK_FALSE(std::get<WatchPlan>(plan("watch=1&timeoutSeconds=0")).ends_at_once);
  CHECK_FALSE(std::get<WatchPlan>(plan("watch=1&timeoutSeconds=7")).ends_at_once);
  // 2^55 s and -2^63 s wrap to exactly 0: no timeout given, so the randomized lifetime.
  for (const char* query : {"watch=1&timeoutSeconds=36028797018963968", "watch=1&timeoutSeconds=-9223372036854775808"}) {
    const auto p = std::get<WatchPlan>(plan(query));
    CHECK_FALSE(p.ends_at_once);
    CHECK(p.lifetime == std::chrono::seconds(2700));
  }
  // The largest timeout that does not wrap (292 years) is capped to stay in the clock's range.
  const auto longest = std::get<WatchPlan>(plan("watch=1&timeoutSeconds=9223372036"));
  CHECK_FALSE(longest.ends_at_once);
  CHECK(longest.lifetime == std::chrono::hours(24 * 365 * 100));
  CHECK(proxy::goWatchTimeoutNanos(std::nullopt) == std::nullopt);
  CHECK(proxy::goWatchTimeoutNanos(9223372036854775807) == -1000000000);
}

TEST_CASE("The deprecated /watch/ path is a watch validated and defaulted by ?watch, as ListResource's forceWatch (W1, W4)") {
  const auto prefixed = [](std::string_view query) {
    return proxy::planWatch(cache::QueryValues::parse(query), "default", pods(), std::chrono::milliseconds(3600000), 0.5, true);
  };
  // Without ?watch=true: no watch-list defaulting, the legacy current-state watch.
  const auto legacy = std::get<WatchPlan>(prefixed("allowWatchBookmarks=true"));
  CHECK(legacy.start == WatchPlan::Start::Snapshot);
  CHECK_FALSE(legacy.initial_events_end);
  // ... checked by the LIST rules: sendInitialEvents is forbidden for list (R4) ...
  CHECK(std::get<HttpAnswer>(prefixed("sendInitialEvents=true&resourceVersionMatch=NotOlderThan")).code == 422);
  // ... but a bad resourceVersion is the watch's bare 500, not the LIST's 400 (R6).
  CHECK(std::get<HttpAnswer>(prefixed("resourceVersion=abc")).code == 500);
  CHECK(std::get<WatchPlan>(prefixed("resourceVersion=5")).start == WatchPlan::Start::Resume);
  // With ?watch=true it is an ordinary watch, defaulted to a watch-list.
  CHECK(std::get<WatchPlan>(prefixed("watch=true&allowWatchBookmarks=true")).initial_events_end);
}

TEST_CASE("Too old and too large watch errors carry the apiserver's Status (W5, R7)") {
  CHECK(cache::statusJson(proxy::expiredStatus("too old resource version: 9000 (11874)")) ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 9000 (11874)","reason":"Expired","code":410})J");
  CHECK(cache::statusJson(cache::tooLargeResourceVersionStatus(99999, 12500)) ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 99999, current: 12500","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504})");
}

TEST_CASE("W2, N2, N4: a watch streams in the encoding the apiserver would pick; other transforms pass through") {
  using cache::Encoding;
  auto encoding = [](std::string_view accept) -> std::optional<Encoding> {
    const auto media = watchMedia(accept);
    if (!media || media->metadata_only) return std::nullopt;
    return media->encoding;
  };
  CHECK(encoding("") == Encoding::Json);
  CHECK(encoding("application/json") == Encoding::Json);
  CHECK(encoding("*/*") == Encoding::Json);
  // client-go's typed clients with the protobuf content type, and kube components.
  CHECK(encoding("application/vnd.kubernetes.protobuf, */*") == Encoding::Protobuf);
  CHECK(encoding("application/vnd.kubernetes.protobuf;stream=watch") == Encoding::Protobuf);
  CHECK(encoding("application/json, application/vnd.kubernetes.protobuf") == Encoding::Json);
  CHECK(encoding("application/vnd.kubernetes.protobuf;q=0.5, application/json") == Encoding::Json);
  CHECK(encoding("application/yaml, application/vnd.kubernetes.protobuf") == Encoding::Protobuf);
  // Metadata informers' watches in protobuf come from the protobuf cache as metadata.
  const auto metadata = watchMedia(
      "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
  REQUIRE(metadata);
  CHECK(metadata->encoding == Encoding::Protobuf);
  CHECK(metadata->metadata_only);
  // JSON metadata, v1beta1 and Tables are rendered by the upstream.
  CHECK_FALSE(watchMedia("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"));
  CHECK_FALSE(watchMedia("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"));
  CHECK_FALSE(watchMedia("application/json;as=Table;g=meta.k8s.io;v=v1"));
  CHECK_FALSE(watchMedia("text/html"));
}

namespace {

std::optional<std::string> capped(std::string_view target, int64_t cap = 30) {
  const size_t qmark = target.find('?');
  const auto query = cache::QueryValues::parse(qmark == std::string_view::npos ? "" : target.substr(qmark + 1));
  return proxy::cappedWatchTarget(target, query, std::chrono::seconds(cap));
}

}  // namespace

TEST_CASE("A watch passing through while its cache starts asks the upstream for a timeout within the cap (W8)") {
  // Absent, 0, or beyond the cap: cut, every other pair byte for byte as sent.
  CHECK(capped("/api/v1/pods?watch=1") == "/api/v1/pods?watch=1&timeoutSeconds=30");
  CHECK(capped("/api/v1/pods") == "/api/v1/pods?timeoutSeconds=30");
  CHECK(capped("/api/v1/pods?allowWatchBookmarks=true&resourceVersion=12&timeoutSeconds=567&watch=true") ==
        "/api/v1/pods?allowWatchBookmarks=true&resourceVersion=12&watch=true&timeoutSeconds=30");
  CHECK(capped("/api/v1/pods?timeoutSeconds=0&labelSelector=a%3Db") == "/api/v1/pods?labelSelector=a%3Db&timeoutSeconds=30");
  // kube-rs's "?&" start, an escaped key, and a second value (the apiserver reads the first).
  CHECK(capped("/api/v1/pods?&watch=true&timeout%53econds=600&timeoutSeconds=5") ==
        "/api/v1/pods?&watch=true&timeoutSeconds=30");
  CHECK(capped("/api/v1/pods?watch=1&timeoutSeconds=%2B600") == "/api/v1/pods?watch=1&timeoutSeconds=30");  // Go's ParseInt takes "+600"
  // Within the cap, expired (W8: the stream ends at once either way), or refused upstream (400): as sent.
  CHECK(capped("/api/v1/pods?watch=1&timeoutSeconds=30") == std::nullopt);
  CHECK(capped("/api/v1/pods?watch=1&timeoutSeconds=7") == std::nullopt);
  CHECK(capped("/api/v1/pods?watch=1&timeoutSeconds=-1") == std::nullopt);
  CHECK(capped("/api/v1/pods?watch=1&timeoutSeconds=9223372036854775807") == std::nullopt);
  CHECK(capped("/api/v1/pods?watch=1&timeoutSeconds=ten") == std::nullopt);
  CHECK(capped("/api/v1/pods?watch=1&timeoutSeconds=+600") == std::nullopt);  // "+" is a space in a query
  CHECK(capped("/api/v1/pods?watch=1", 0) == std::nullopt);
}
