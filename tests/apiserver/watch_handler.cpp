// WATCH (W1-W11): JSON lines over a chunked response, flushed per batch of events.
#include <random>

#include "api_server.h"
#include "list_paging.h"

namespace testapi {
namespace {

constexpr auto kPollInterval = std::chrono::seconds(1);  // how often a quiet stream checks its peer
constexpr auto kPreDeadlineBookmark = std::chrono::seconds(2);  // W7: one bookmark ~2 s before the end
constexpr size_t kFlushBytes = 64 * 1024;

// Encodes the objects of one watch stream in the negotiated form.
class FrameEncoder {
 public:
  FrameEncoder(const ServedResource& res, OutputKind kind, TableOptions table)
      : res_(res), kind_(kind), table_(std::move(table)) {}

  Result<std::string> frame(const char* type, const std::string& object_json) {
    std::string obj;
    if (kind_ == OutputKind::Table) {
      TableOptions t = table_;
      t.column_definitions = first_table_;  // N3: only the first event carries columnDefinitions
      auto r = tableFor(res_.def, {object_json}, t, ListMetaOut{});
      if (auto* e = std::get_if<ApiError>(&r)) return *e;
      first_table_ = false;
      obj = std::move(std::get<std::string>(r));
    } else if (kind_ == OutputKind::PartialObjectMetadata) {
      obj = partialObjectMetadataFor(object_json);
    }
    const std::string& o = obj.empty() ? object_json : obj;
    std::string s;
    s.reserve(o.size() + 32);
    s += "{\"type\":\"";
    s += type;
    s += "\",\"object\":";
    s += o;
    s += "}\n";
    return s;
  }

  // W7: an empty object of the watched type carrying only the RV (and the W9 marker).
  std::string bookmark(uint64_t rv, bool initial_events_end) const {
    const std::string rv_member = "\"resourceVersion\":\"" + std::to_string(rv) + "\"";
    const std::string marker = "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}";
    // ObjectMeta's struct order (resourceVersion before annotations), except for a
    // custom resource: the cacher's newFunc gives an Unstructured, a map whose keys
    // encode sorted.
    std::string meta = "{";
    if (kind_ != OutputKind::PartialObjectMetadata && !res_.def.builtin) {
      if (initial_events_end) meta += marker + ",";
      meta += rv_member;
    } else {
      meta += rv_member;
      if (initial_events_end) meta += "," + marker;
    }
    meta += "}";
    std::string obj;
    if (kind_ == OutputKind::PartialObjectMetadata) {
      obj = R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)" + meta + "}";
    } else if (res_.def.builtin) {
      obj = "{\"kind\":" + jsonQuote(res_.def.kind) + ",\"apiVersion\":" + jsonQuote(res_.def.groupVersion()) +
            ",\"metadata\":" + meta;
      if (!res_.empty_object_tail.empty()) obj += "," + res_.empty_object_tail;
      obj += "}";
    } else {
      obj = "{\"apiVersion\":" + jsonQuote(res_.def.groupVersion()) + ",\"kind\":" + jsonQuote(res_.def.kind) +
            ",\"metadata\":" + meta + "}";
    }
    return "{\"type\":\"BOOKMARK\",\"object\":" + obj + "}\n";
  }

 private:
  const ServedResource& res_;
  OutputKind kind_;
  TableOptions table_;
  bool first_table_ = true;
};

// W8, as handleWatch computes it: time.Duration(timeoutSeconds) * time.Second, int64
// nanoseconds that wrap on overflow (9223372036854775807 s is -1 s). Negative: the
// deadline has passed already (nullopt). Absent or 0, also after wrapping: a random
// duration in [1800 s, 3600 s). Capped at a century to stay in the clock's range.
std::optional<std::chrono::nanoseconds> watchTimeout(const ListOptions& opts) {
  const int64_t ns = opts.has_timeout_seconds
                         ? static_cast<int64_t>(static_cast<uint64_t>(opts.timeout_seconds) * uint64_t{1000000000})
                         : 0;
  if (ns < 0) return std::nullopt;
  if (ns > 0) return std::min(std::chrono::nanoseconds(ns), std::chrono::nanoseconds(std::chrono::hours(24 * 365 * 100)));
  thread_local std::mt19937 rng{std::random_device{}()};
  return std::chrono::seconds(1800 + rng() % 1800);
}

struct WatchRegistration {
  Storage& storage;
  const ServedResource& res;
  WatchQueuePtr queue;
  ~WatchRegistration() {
    if (queue) storage.unwatch(res, queue);
  }
};

}  // namespace

void ApiServer::handleWatch(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                            ResponseStream& out) {
  auto kind = negotiateOutput(req.header("accept"), true, true);
  if (auto* e = std::get_if<ApiError>(&kind)) return sendStatusError(req, out, *e);
  // Handler checks, then the field labels for the type, then the storage's RV parse: a
  // bad field label wins over a bad RV (S5 before R6), as on a LIST.
  auto parsed = parseWatchOptionsInHandler(req.query);
  if (auto* e = std::get_if<ApiError>(&parsed)) return sendStatusError(req, out, *e);
  const ListOptions& opts = std::get<ListOptions>(parsed);
  auto filter_r = ObjectFilter::make(res, info.ns, info.name, opts);
  if (auto* e = std::get_if<ApiError>(&filter_r)) return sendStatusError(req, out, *e);
  const ObjectFilter& filter = std::get<ObjectFilter>(filter_r);
  if (auto e = validateWatchStorage(opts)) return sendStatusError(req, out, *e);
  counters_.watches++;
  {
    std::lock_guard lk(counters_.mu);
    counters_.recent_watches.push_back(
        {res.def.qualifiedResource(), opts.has_resource_version ? opts.resource_version : "",
         opts.send_initial_events ? (*opts.send_initial_events ? "true" : "false") : ""});
    if (counters_.recent_watches.size() > 100) counters_.recent_watches.pop_front();
  }

  const bool rv_given = opts.has_resource_version && opts.resource_version != "0";
  std::optional<uint64_t> from_rv;
  if (rv_given) {
    from_rv = parseResourceVersion(opts.resource_version);
    if (!from_rv)
      return sendStatusError(req, out, ApiError{500, "", "resourceVersion: Invalid value: \"" + opts.resource_version +
                                                        "\": strconv.ParseUint: parsing \"" + opts.resource_version +
                                                        "\": invalid syntax"});
  }
  const auto timeout = watchTimeout(opts);
  if (!timeout) {
    // W8: the deadline passed before the stream began. kube-apiserver races its expired
    // context against the first event (none, an ERROR "context deadline exceeded", or
    // initial events); this is the answer it gives when the context wins.
    if (out.startChunked(200, "application/json", standardHeaders())) out.finishChunked();
    return;
  }
  // W4 defaulting (1.34+): RV unset/0 without sendInitialEvents or RVM becomes a
  // watch-list, so a bookmark-enabled client gets the initial-events-end marker.
  // Not defaulted (the /watch/ path without ?watch=true): the legacy watch, the current
  // state without the end bookmark when it starts from RV unset/0.
  bool send_initial = opts.send_initial_events.value_or(!rv_given);
  bool watch_list = opts.send_initial_events.has_value();
  bool end_marker = send_initial && watch_list && opts.allow_watch_bookmarks;

  Headers headers = standardHeaders();
  const auto deadline = std::chrono::steady_clock::now() + *timeout;
  FrameEncoder enc(res, std::get<OutputKind>(kind), tableOptionsFrom(req.query));

  auto errorAndClose = [&](const ApiError& e) {
    if (!out.startChunked(200, "application/json", headers)) return;
    out.writeChunk("{\"type\":\"ERROR\",\"object\":" + e.toJson() + "}\n");
    out.finishChunked();
  };

  // RV unset is a consistent start: the cache is brought to the current revision first.
  if (!opts.has_resource_version) storage_.progress(res);
  std::optional<Storage::WatchStart> start;
  if (watch_list && from_rv) {
    // W9: a watch-list at RV=N waits (3 s) until the store reaches N.
    if (!storage_.waitForRv(*from_rv, std::chrono::steady_clock::now() + opts_.too_large_rv_wait))
      return errorAndClose(tooLargeResourceVersion(*from_rv, storage_.currentRv()));
  }
  if (send_initial) {
    start = storage_.watch(res, filter.namespaceScope(), true, 0);
  } else if (from_rv) {
    start = storage_.watch(res, filter.namespaceScope(), false, *from_rv);
    if (!start) return errorAndClose(expiredWatch(*from_rv, storage_.compactedRv()));  // W5
  } else {
    // sendInitialEvents=false with RV unset/0: start at the current RV (W9).
    start = storage_.watch(res, filter.namespaceScope(), false, storage_.currentRv());
  }
  WatchRegistration reg{storage_, res, start->queue};

  if (!out.startChunked(200, "application/json", headers)) return;
  std::string buf;
  auto flush = [&]() {
    bool ok = out.writeChunk(buf);
    buf.clear();
    return ok;
  };
  for (const auto& obj : start->initial) {
    if (!filter.matches(*obj)) continue;
    auto f = enc.frame("ADDED", obj->json);
    if (auto* e = std::get_if<ApiError>(&f)) {
      buf += "{\"type\":\"ERROR\",\"object\":" + e->toJson() + "}\n";
      flush();
      out.finishChunked();
      return;
    }
    buf += std::get<std::string>(f);
    if (buf.size() >= kFlushBytes && !flush()) return;
  }
  uint64_t last_rv = start->start_rv;
  if (end_marker) buf += enc.bookmark(last_rv, true);
  if (!buf.empty() && !flush()) return;

  auto next_bookmark = std::chrono::steady_clock::now() + opts_.bookmark_interval;
  bool pre_deadline_sent = false;
  while (true) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    auto wake = std::min({now + kPollInterval, deadline, next_bookmark});
    EventPtr ev = start->queue->pop(wake);
    if (!ev) {
      if (start->queue->closed() || out.peerClosed()) break;
      now = std::chrono::steady_clock::now();
      bool due = now >= next_bookmark || (!pre_deadline_sent && now + kPreDeadlineBookmark >= deadline);
      if (opts.allow_watch_bookmarks && due) {
        if (now + kPreDeadlineBookmark >= deadline) pre_deadline_sent = true;
        next_bookmark = now + opts_.bookmark_interval;
        auto rv = storage_.idleRv(res, *start->queue);
        if (rv && *rv > last_rv) {
          last_rv = *rv;
          if (!out.writeChunk(enc.bookmark(*rv, false))) break;
        }
      } else if (now >= next_bookmark) {
        next_bookmark = now + opts_.bookmark_interval;
      }
      continue;
    }
    // Drain whatever is queued into one write.
    for (; ev; ev = start->queue->pop(std::chrono::steady_clock::now())) {
      if (ev->rv <= start->start_rv) continue;  // W4: start at exact N, events <= N suppressed
      // W10: compare the filter against the previous and the new object.
      bool now_match = ev->type != EventType::Deleted && filter.matches(*ev->object);
      bool was_match = ev->prev && filter.matches(*ev->prev);
      const char* type = nullptr;
      std::string json;
      if (ev->type == EventType::Deleted) {
        if (!was_match) continue;
        type = "DELETED";
        json = ev->object->json;  // last state at the deletion RV (W3)
      } else if (now_match && was_match) {
        type = "MODIFIED";
        json = ev->object->json;
      } else if (now_match) {
        type = "ADDED";
        json = ev->object->json;
      } else if (was_match) {
        type = "DELETED";
        json = withResourceVersion(res, *ev->prev, ev->rv)->json;
      } else {
        continue;
      }
      auto f = enc.frame(type, json);
      if (auto* e = std::get_if<ApiError>(&f)) {
        buf += "{\"type\":\"ERROR\",\"object\":" + e->toJson() + "}\n";
        break;
      }
      buf += std::get<std::string>(f);
      last_rv = ev->rv;
      if (buf.size() >= kFlushBytes && !flush()) return;
    }
    if (!buf.empty() && !flush()) return;
    if (start->queue->closed()) break;  // dropped as too slow, or control/drop-watches (W6)
  }
  out.finishChunked();
}

}  // namespace testapi
