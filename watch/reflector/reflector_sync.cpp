// How the Reflector gets a full state: watch-list (contract W9, K2) with a fallback to
// paged LIST (K1, P). The watch loop itself is in reflector.cpp.

#include <string>
#include <utility>
#include <vector>

#include "watch/reflector/list_page_decoder.h"
#include "watch/reflector/reflector.h"

namespace watch {
namespace {

// A LIST whose continue token expired (410 mid-pagination) starts over from the first
// page; past this many restarts in one relist the upstream is compacting faster than we
// can read, and the relist backs off instead.
constexpr int kMaxPaginationRestarts = 3;

}  // namespace

Reflector::Outcome Reflector::relist(std::stop_token stop) {
  const bool first = !stats_.synced.load(std::memory_order_acquire) && stats_.upstream_relists_total.load() == 0;
  if (!(first && !options_.limit_first_sync) && !relist_limiter_.acquire(stop)) return {Outcome::Then::Stop, false};
  stats_.upstream_relists_total.fetch_add(1, std::memory_order_relaxed);
  if (watch_list_supported_) {
    bool fall_back = false;
    Outcome outcome = watchList(stop, fall_back);
    if (!fall_back) return outcome;
    watch_list_supported_ = false;
    stats_.upstream_watch_list_fallbacks_total.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::Info, "upstream does not complete watch-list; using paged LIST from now on");
  }
  return listThenWatch(stop);
}

// State of a watch-list stream before its initial-events-end bookmark.
struct Reflector::WatchListAttempt {
  std::vector<RawObject> items;
  SyncProgress sync;
  bool synced = false;
  // Set when the upstream answered something that shows it cannot serve watch-list.
  bool unsupported = false;
  // Set when the stream was canceled before the sync for a reason that a retry of
  // watch-list may fix (ERROR Expired/TooLarge/429/5xx, malformed line).
  bool retry = false;
  Stream stream;
};

Reflector::Outcome Reflector::watchList(std::stop_token stop, bool& fall_back) {
  ListOptions opts = watchOptions();
  opts.send_initial_events = true;
  opts.resource_version_match = "NotOlderThan";  // RV unset: a consistent snapshot

  WatchListAttempt attempt;
  attempt.sync = startSync();
  store_.clearStaged();  // leftovers of an abandoned attempt
  auto on_line = [&](std::string_view line) {
    if (attempt.synced) return handleLine(line, attempt.stream);
    // Initial ADDED events the store parses as they arrive: one pass, no raw copy held.
    if (store_.stageInitialLine(line)) {
      progress(attempt.sync, line.size(), "watch-list");
      return true;
    }
    DecodeResult decoded = decoder_.decode(line);
    if (!decoded.event) {
      stats_.malformed_events_total.fetch_add(1, std::memory_order_relaxed);
      log(LogLevel::Warning, "malformed watch-list event, relisting: " + decoded.error);
      attempt.retry = true;
      return false;
    }
    WatchEvent& event = *decoded.event;
    switch (event.type) {
      case EventType::Added:
        // Initial events come in key order with unordered RVs (W4): no RV checks here.
        progress(attempt.sync, event.object.size(), "watch-list");
        attempt.items.push_back(std::move(event.object));
        return true;
      case EventType::Bookmark: {
        if (!event.object.empty()) store_.observeBookmarkObject(event.object);
        if (!event.initial_events_end) return true;  // progress only; the sync RV comes later
        StoreOutcome status = store_.replace(std::move(attempt.items), event.resource_version);
        if (!status.ok()) {
          attempt.stream.ended_by_us = true;
          attempt.stream.outcome = storeFailed(status, "the watch-list state");
          attempt.synced = true;  // the outcome above decides; this is not a fallback case
          return false;
        }
        attempt.synced = true;
        markSynced(SyncMode::WatchList, attempt.sync, event.resource_version, status.changed_objects);
        return true;
      }
      case EventType::Error: {
        Outcome outcome = failureStatus(event.status_code, event.status_reason, event.status_message);
        // Expired, TooLarge, overload and outages say nothing about watch-list support.
        const bool transient = event.status_code == 410 || event.status_code == 429 ||
                               event.status_code >= 500 || outcome.then == Outcome::Then::Watch;
        log(LogLevel::Info, "watch-list ended with ERROR " + std::to_string(event.status_code) + " " +
                                event.status_reason + ": " + event.status_message);
        (transient ? attempt.retry : attempt.unsupported) = true;
        return false;
      }
      case EventType::Modified:
      case EventType::Deleted:
        log(LogLevel::Warning, std::string(cache::wireName(event.type)) + " before the end of the initial events");
        attempt.unsupported = true;
        return false;
    }
    return false;
  };

  const WatchResult result = lister_watcher_.watch(opts, on_line, stop);
  if (stop.stop_requested() || result.end == WatchEnd::Stopped) return {Outcome::Then::Stop, false};
  if (attempt.synced) return watchEnded(result, attempt.stream, attempt.sync.started, stop);
  if (attempt.retry) return {Outcome::Then::Relist, true};
  if (attempt.unsupported) {
    fall_back = true;
    return {};
  }
  return watchListEndedUnsynced(result, fall_back);
}

Reflector::Outcome Reflector::watchListEndedUnsynced(const WatchResult& result, bool& fall_back) {
  switch (result.end) {
    case WatchEnd::HttpError: {
      const int code = result.status;
      // A 4xx other than overload/expiry means the request form is refused (e.g. 422/400
      // from an apiserver without the WatchList feature): use LIST from now on.
      if (code >= 400 && code < 500 && code != 410 && code != 429) {
        log(LogLevel::Info, "watch-list refused with HTTP " + std::to_string(code));
        fall_back = true;
        return {};
      }
      return {Outcome::Then::Relist, true};
    }
    case WatchEnd::TransportError:
      log(LogLevel::Info, "watch-list failed: " + result.transport_error);
      // Nothing received: the upstream is unreachable, which says nothing about support.
      if (result.lines == 0) return {Outcome::Then::Relist, true};
      fall_back = true;
      return {};
    case WatchEnd::Closed:
    case WatchEnd::Canceled:
    case WatchEnd::Stopped:
      break;
  }
  // The stream ended without the initial-events-end bookmark: this upstream (or a gateway
  // in front of it) does not implement W9 fully. Retrying would never sync (K2), so fall back.
  // TODO(watch-list): an apiserver older than 1.27 ignores sendInitialEvents and streams
  // plain ADDED events that never end with the bookmark; we only notice when that stream
  // times out (timeoutSeconds, 5-10 min), so the first sync against such a server is that
  // late. cmd can avoid it by setting use_watch_list=false from the server's /version.
  log(LogLevel::Warning, "watch-list ended before the initial-events-end bookmark");
  fall_back = true;
  return {};
}

Reflector::Outcome Reflector::listThenWatch(std::stop_token stop) {
  ListOptions opts;
  opts.limit = options_.page_size;
  opts.label_selector = options_.label_selector;
  opts.field_selector = options_.field_selector;
  if (options_.encoding == cache::Encoding::Protobuf) opts.accept = kProtobufMediaType;

  SyncProgress sync = startSync();
  store_.clearStaged();  // a watch-list attempt that fell back may have staged some
  std::vector<RawObject> items;
  uint64_t list_rv = 0;
  int restarts = 0;
  while (true) {
    ListResponse response = lister_watcher_.list(opts, stop);
    if (stop.stop_requested()) return {Outcome::Then::Stop, false};
    if (response.status == 0) {
      log(LogLevel::Info, "list failed: " + response.transport_error);
      return {Outcome::Then::Relist, true};
    }
    if (response.status == 410 && !opts.continue_token.empty() && restarts < kMaxPaginationRestarts) {
      // The continue token outlived the upstream's compaction window (P7): start over.
      ++restarts;
      log(LogLevel::Info, "continue token expired, restarting the list");
      items.clear();
      sync = startSync();
      opts.continue_token.clear();
      continue;
    }
    if (response.status != 200) {
      log(LogLevel::Info, "list refused with HTTP " + std::to_string(response.status));
      return {Outcome::Then::Relist, true};
    }
    ListPageResult decoded = options_.encoding == cache::Encoding::Protobuf
                                 ? decodeProtobufListPage(response.body)
                                 : decodeListPage(std::move(response.body));
    if (!decoded.page) {
      stats_.malformed_events_total.fetch_add(1, std::memory_order_relaxed);
      log(LogLevel::Warning, "malformed list page: " + decoded.error);
      return {Outcome::Then::Relist, true};
    }
    stats_.upstream_list_pages_total.fetch_add(1, std::memory_order_relaxed);
    ListPage& page = *decoded.page;
    // Every page of one list is read at the first page's RV (the token pins it).
    if (opts.continue_token.empty()) {
      list_rv = page.resource_version;
      if (page.remaining_item_count) expectObjects(sync, page.items.size() + *page.remaining_item_count);
    }
    for (auto& item : page.items) {
      progress(sync, item.size(), "list");
      items.push_back(std::move(item));
    }
    if (page.continue_token.empty()) break;
    opts.continue_token = std::move(page.continue_token);
  }

  StoreOutcome status = store_.replace(std::move(items), list_rv);
  if (!status.ok()) return storeFailed(status, "the listed state");
  markSynced(SyncMode::List, sync, list_rv, status.changed_objects);
  return watchFrom(list_rv, stop, false);
}

}  // namespace watch
