// WATCH (W1-W11): JSON events over a chunked response, flushed per batch of events, or
// over a WebSocket (watch_stream.h).
#include <random>

#include "tests/apiserver/handlers/api_server.h"
#include "tests/apiserver/lists/list_paging.h"
#include "tests/apiserver/watch/watch_stream.h"

namespace testapi {
namespace {

constexpr auto kPreDeadlineBookmark = std::chrono::seconds(2);  // W7: one bookmark ~2 s before the end

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

std::string errorEvent(const ApiError& e) { return "{\"type\":\"ERROR\",\"object\":" + e.toJson() + "}\n"; }

// W10: an event as a filtered watch sees it, comparing the filter against the previous
// and the new object; nullopt when it sees nothing.
std::optional<std::pair<const char*, std::string>> asSeenBy(const ObjectFilter& filter, const ServedResource& res,
                                                            const Event& ev) {
  const bool now_match = ev.type != EventType::Deleted && filter.matches(*ev.object);
  const bool was_match = ev.prev && filter.matches(*ev.prev);
  if (ev.type == EventType::Deleted) {
    if (!was_match) return std::nullopt;
    return std::make_pair("DELETED", ev.object->json);  // last state at the deletion RV (W3)
  }
  if (now_match) return std::make_pair(was_match ? "MODIFIED" : "ADDED", ev.object->json);
  if (was_match) return std::make_pair("DELETED", withResourceVersion(res, *ev.prev, ev.rv)->json);
  return std::nullopt;
}

// One open watch: its initial state, then its events and bookmarks until the deadline,
// the client leaving or the queue closing (W3, W6, W7, W8, W11).
class WatchSession {
 public:
  WatchSession(Storage& storage, const ServedResource& res, const ObjectFilter& filter, FrameEncoder& enc,
               Storage::WatchStart& start, WatchStream& stream)
      : storage_(storage), res_(res), filter_(filter), enc_(enc), start_(start), stream_(stream),
        last_rv_(start.start_rv) {}

  // The synthetic ADDED events, then the W9 bookmark when asked for; false when the
  // stream has ended (an encoding error was sent, or the client is gone).
  bool sendInitial(bool end_marker) {
    for (const auto& obj : start_.initial) {
      if (!filter_.matches(*obj)) continue;
      if (!writeEvent("ADDED", obj->json)) return false;
    }
    if (end_marker) stream_.write(enc_.bookmark(last_rv_, true));
    return stream_.flush();
  }

  void run(std::chrono::steady_clock::time_point deadline, bool bookmarks, std::chrono::seconds interval) {
    auto next_bookmark = std::chrono::steady_clock::now() + interval;
    bool pre_deadline_sent = false;
    while (true) {
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      EventPtr ev = start_.queue->pop(std::min({now + stream_.pollInterval(), deadline, next_bookmark}));
      if (ev) {
        if (!sendBatch(std::move(ev)) || start_.queue->closed() || stream_.clientGone()) break;
        continue;
      }
      if (start_.queue->closed() || stream_.clientGone()) break;  // dropped or too slow (W6), or gone
      now = std::chrono::steady_clock::now();
      const bool due = now >= next_bookmark || (!pre_deadline_sent && now + kPreDeadlineBookmark >= deadline);
      if (!due) continue;
      next_bookmark = now + interval;
      if (!bookmarks) continue;
      if (now + kPreDeadlineBookmark >= deadline) pre_deadline_sent = true;
      auto rv = storage_.idleRv(res_, *start_.queue);
      if (rv && *rv > last_rv_) {
        last_rv_ = *rv;
        if (!stream_.write(enc_.bookmark(*rv, false)) || !stream_.flush()) break;
      }
    }
  }

 private:
  // Writes `ev` and whatever else is queued, then flushes: one flush per batch.
  bool sendBatch(EventPtr ev) {
    for (; ev; ev = start_.queue->pop(std::chrono::steady_clock::now())) {
      if (ev->rv <= start_.start_rv) continue;  // W4: start at exact N, events <= N suppressed
      auto seen = asSeenBy(filter_, res_, *ev);
      if (!seen) continue;
      if (!writeEvent(seen->first, seen->second)) return false;
      last_rv_ = ev->rv;
    }
    return stream_.flush();
  }

  // False when the stream ends: an object that cannot be encoded ends it with an ERROR.
  bool writeEvent(const char* type, const std::string& json) {
    auto f = enc_.frame(type, json);
    if (auto* e = std::get_if<ApiError>(&f)) {
      stream_.write(errorEvent(*e));
      stream_.flush();
      return false;
    }
    return stream_.write(std::get<std::string>(f));
  }

  Storage& storage_;
  const ServedResource& res_;
  const ObjectFilter& filter_;
  FrameEncoder& enc_;
  Storage::WatchStart& start_;
  WatchStream& stream_;
  uint64_t last_rv_;  // the RV of the last event or bookmark sent
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
  recordWatch(res, opts);

  const bool rv_given = opts.has_resource_version && opts.resource_version != "0";
  std::optional<uint64_t> from_rv;
  if (rv_given) {
    from_rv = parseResourceVersion(opts.resource_version);
    if (!from_rv)
      return sendStatusError(req, out, ApiError{500, "", "resourceVersion: Invalid value: \"" + opts.resource_version +
                                                        "\": strconv.ParseUint: parsing \"" + opts.resource_version +
                                                        "\": invalid syntax"});
  }
  // W4 defaulting (1.34+): RV unset/0 without sendInitialEvents or RVM becomes a
  // watch-list, so a bookmark-enabled client gets the initial-events-end marker.
  // Not defaulted (the /watch/ path without ?watch=true): the legacy watch, the current
  // state without the end bookmark when it starts from RV unset/0.
  const bool send_initial = opts.send_initial_events.value_or(!rv_given);
  // isListWatchRequest: what gets the end bookmark, and gzip (W9, WatchListCompression).
  const bool watch_list = opts.send_initial_events.value_or(false) && opts.allow_watch_bookmarks;
  const auto timeout = watchTimeout(opts);
  const WatchStreamOptions stream_opts{standardHeaders(), watch_list};
  if (!timeout) {
    // W8: the deadline passed before the stream began. kube-apiserver races its expired
    // context against the first event (none, an ERROR "context deadline exceeded", or
    // initial events); this is the answer it gives when the context wins.
    if (auto stream = openWatchStream(req, out, stream_opts)) stream->finish();
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + *timeout;
  auto errorAndClose = [&](const ApiError& e) {
    auto stream = openWatchStream(req, out, stream_opts);
    if (!stream) return;
    stream->write(errorEvent(e));
    stream->finish();
  };

  // RV unset is a consistent start: the cache is brought to the current revision first.
  if (!opts.has_resource_version) storage_.progress(res);
  std::optional<Storage::WatchStart> start;
  if (opts.send_initial_events.has_value() && from_rv) {
    // W9: a watch-list at RV=N waits (3 s) until the store reaches N.
    if (!storage_.waitForRv(*from_rv, std::chrono::steady_clock::now() + opts_.too_large_rv_wait))
      return errorAndClose(tooLargeResourceVersion(*from_rv, storage_.currentRv()));
  }
  if (send_initial) {
    start = storage_.watch(res, filter.namespaceScope(), true, 0);
  } else if (from_rv) {
    start = storage_.watch(res, filter.namespaceScope(), false, *from_rv);
    if (!start) return errorAndClose(expiredWatch(*from_rv, storage_.watchWindowStartRv()));  // W5
  } else {
    // sendInitialEvents=false with RV unset/0: start at the current RV (W9).
    start = storage_.watch(res, filter.namespaceScope(), false, storage_.currentRv());
  }
  WatchRegistration reg{storage_, res, start->queue};

  auto stream = openWatchStream(req, out, stream_opts);
  if (!stream) return;
  FrameEncoder enc(res, std::get<OutputKind>(kind), tableOptionsFrom(req.query));
  WatchSession session(storage_, res, filter, enc, *start, *stream);
  if (session.sendInitial(send_initial && watch_list)) session.run(deadline, opts.allow_watch_bookmarks, opts_.bookmark_interval);
  if (start->queue->wasCut()) return stream->abort();
  stream->finish();
}

void ApiServer::recordWatch(const ServedResource& res, const ListOptions& opts) {
  counters_.watches++;
  std::lock_guard lk(counters_.mu);
  counters_.recent_watches.push_back(
      {res.def.qualifiedResource(), opts.has_resource_version ? opts.resource_version : "",
       opts.send_initial_events ? (*opts.send_initial_events ? "true" : "false") : ""});
  if (counters_.recent_watches.size() > 100) counters_.recent_watches.pop_front();
}

}  // namespace testapi
