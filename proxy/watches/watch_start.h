#pragma once
// The start of a watch served from the cache (contract W4, W9): the watcher registered
// with the dispatcher first, then the state it starts from read (the initial state, or a
// replay of the history), so that the two meet without a gap or an overlap; and the
// writing of that start to the client's EventWriter.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cache/snapshot.h"
#include "cache/thread_safe_store.h"
#include "proxy/asio_beast.h"
#include "proxy/stream.h"
#include "proxy/watches/watch_request.h"
#include "watch/fanout/cache_watcher.h"
#include "watch/fanout/event_encoder.h"
#include "watch/fanout/watch_dispatcher.h"
#include "watch/freshness.h"

namespace proxy::io {

// Where a registered watcher starts: the initial state (`snapshot`), a replay of the
// history (`cursor`, up to `replay_through`), or now. `last_rv` is the stream's RV at
// that point.
struct WatchStart {
  watch::WatchDispatcher::RegistrationPtr registration;
  cache::SnapshotConstSharedPtr snapshot;
  std::optional<cache::HistoryCursor> cursor;
  uint64_t replay_through = 0;
  uint64_t last_rv = 0;
  bool raced = false;                  // the snapshot is older than the proof: pass through
  std::optional<std::string> expired;  // W5: the history no longer reaches from_rv, and why
};

// Registers `watcher` first, then reads the snapshot or history: the dispatcher
// guarantees that the two meet without a gap or an overlap.
WatchStart registerWatcher(watch::WatchDispatcher& dispatcher, const cache::ThreadSafeStore& store,
                           const std::shared_ptr<watch::CacheWatcher>& watcher, const WatchPlan& plan,
                           const std::optional<watch::Freshness>& proof);

// W4/W9: the current state as ADDED events in key order, each at its own RV, then the
// initial-events-end bookmark when asked for.
asio::awaitable<void> sendInitialState(EventWriter& out, const cache::Snapshot& snapshot, const WatchPlan& plan,
                                       const watch::FrameEncoder& encoder, bool metadata_only,
                                       const watch::BookmarkEncoder& bookmarks, uint64_t last_rv,
                                       uint64_t& events_sent);

// W4 RV=N: the history after N up to where live delivery starts (`replay_through`).
asio::awaitable<void> replayHistory(EventWriter& out, const cache::ThreadSafeStore& store, cache::HistoryCursor& cursor,
                                    uint64_t replay_through, const watch::FrameEncoder& encoder, bool metadata_only,
                                    const watch::WatchFilter& filter, watch::CacheWatcher& watcher, uint64_t& last_rv,
                                    uint64_t& events_sent);

}  // namespace proxy::io
