// The start of a cached watch (see the header).
#include "proxy/watches/watch_start.h"

#include <algorithm>
#include <vector>

#include "proxy/reads/cache_serving.h"

namespace proxy::io {
namespace {

constexpr size_t kReplayBatch = 256;
constexpr size_t kFlushBytes = 64 * 1024;

// The frame `event` becomes for this watch, or "" when it sends nothing (W10).
std::string replayFrame(const watch::FrameEncoder& encoder, bool metadata_only, const watch::WatchFilter& filter,
                        const cache::WatchEvent& event) {
  const auto delivery = filter.convert(event);
  if (!delivery) return {};
  if (delivery->source == watch::DeliverySource::PreviousAtEvent) {
    return encoder.event(delivery->type, *event.prev_object->withResourceVersion(event.resource_version),
                         metadata_only);
  }
  return encoder.event(delivery->type, *event.object, metadata_only);
}

}  // namespace

// Registers `watcher` first, then reads the snapshot or history: the dispatcher
// guarantees that the two meet without a gap or an overlap.
WatchStart registerWatcher(watch::WatchDispatcher& dispatcher, const cache::ThreadSafeStore& store,
                           const std::shared_ptr<watch::CacheWatcher>& watcher, const WatchPlan& plan,
                           const std::optional<watch::Freshness>& proof) {
  WatchStart out;
  switch (plan.start) {
    case WatchPlan::Start::Snapshot: {
      auto start = dispatcher.registerWithSnapshot(watcher, proof ? proof->revision : 0);
      out.registration = std::move(start.registration);
      out.snapshot = std::move(start.snapshot);
      out.last_rv = out.snapshot->resourceVersion();
      if (proof) {
        if (!freshEnough(out.last_rv, *proof)) {
          out.raced = true;
          break;
        }
        // The initial state is the upstream's at the proven revision: the
        // initial-events-end bookmark says so, and nothing at or below it follows.
        out.last_rv = std::max(out.last_rv, proof->revision);
      }
      break;
    }
    case WatchPlan::Start::Resume: {
      auto start = dispatcher.registerAfter(watcher, plan.from_rv);
      out.registration = std::move(start.registration);
      out.replay_through = start.replay_through;
      out.last_rv = plan.from_rv;
      if (plan.from_rv < out.replay_through) {
        auto c = store.watchCursor(plan.from_rv);
        if (!c) {
          out.expired = c.error().message;
          break;
        }
        out.cursor = *c;
      }
      break;
    }
    case WatchPlan::Start::Now: {
      // RV unset: the changes after a revision read when the request arrived (C1).
      const uint64_t now_rv = std::max(store.currentRV(), proof ? proof->revision : 0);
      auto start = dispatcher.registerAfter(watcher, now_rv);
      out.registration = std::move(start.registration);
      out.last_rv = std::max(now_rv, start.replay_through);
      break;
    }
  }
  return out;
}

// W4/W9: the current state as ADDED events in key order, each at its own RV.
asio::awaitable<void> sendInitialState(EventWriter& out, const cache::Snapshot& snapshot, const WatchPlan& plan,
                                       const watch::FrameEncoder& encoder, bool metadata_only,
                                       const watch::BookmarkEncoder& bookmarks, uint64_t last_rv,
                                       uint64_t& events_sent) {
  cache::ListRequest list;
  list.namespace_name = plan.filter.namespaceScope();
  list.predicate = [&plan](const cache::Object& o) { return plan.filter.matches(o); };
  for (const auto& object : snapshot.list(list).items) {
    out.add(encoder.event(cache::EventType::Added, *object, metadata_only));
    ++events_sent;
    if (out.bytes() >= kFlushBytes) co_await out.flush();
  }
  if (plan.initial_events_end) {
    out.add(bookmarks.frame(last_rv, true));
    ++events_sent;
  }
  co_await out.flush();
}

// W4 RV=N: the history after N up to where live delivery starts (`replay_through`).
asio::awaitable<void> replayHistory(EventWriter& out, const cache::ThreadSafeStore& store, cache::HistoryCursor& cursor,
                                    uint64_t replay_through, const watch::FrameEncoder& encoder, bool metadata_only,
                                    const watch::WatchFilter& filter,
                                    watch::CacheWatcher& watcher, uint64_t& last_rv, uint64_t& events_sent) {
  std::vector<cache::WatchEvent> events;
  bool done = false;
  while (!done) {
    events.clear();
    if (!store.readEvents(cursor, kReplayBatch, events)) {
      // Evicted while we read: end silently (W6); the client resumes and learns 410.
      watcher.close(watch::CacheWatcher::CloseReason::Stopped);
      break;
    }
    if (events.empty()) break;
    for (const auto& event : events) {
      if (event.resource_version > replay_through) {
        done = true;
        break;
      }
      std::string frame = replayFrame(encoder, metadata_only, filter, event);
      if (frame.empty()) continue;
      out.add(std::move(frame));
      last_rv = event.resource_version;
      ++events_sent;
    }
    // A batch may end between events sharing an RV; that is harmless here because
    // the stream never ends during replay except when the client fails.
    co_await out.flush();
  }
}

}  // namespace proxy::io
