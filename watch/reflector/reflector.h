#pragma once
// Reflector: keeps one resource's store equal to the upstream's state (client-go
// tools/cache Reflector; contract K1, K2, W4, W5, W7, W9, R7, R8).
//
// Guarantees:
// - One upstream connection at a time. The first full state comes from a streaming list
//   (watch-list, W9) when the upstream supports it, else from a paged LIST (limit 500,
//   RV unset = consistent); the mode that works is remembered. The store receives it as
//   one atomic replace() at the list RV.
// - Then it watches from that RV with bookmarks on and a timeoutSeconds in [300, 600),
//   and applies every ADDED/MODIFIED/DELETED event to the store in upstream order,
//   exactly once, without coalescing; bookmarks advance the store RV.
// - A clean end of the watch re-watches from the last RV without a relist. 410 Expired
//   (ERROR event or HTTP) and 504 TooLargeResourceVersion relist with RV unset, never "0";
//   a relist that changed the store ends the downstream watches from before it (the
//   store and dispatcher do: ThreadSafeStore::replace, WatchDispatcher::onRelist).
//   429, transport errors and 5xx back off and re-watch from the last RV. An RV going
//   backwards, a malformed line or a store refusal is counted and answered with a relist.
// - Every retry after a failure waits a jittered exponential backoff, and every relist
//   also waits on the shared RelistLimiter, so reflectors that failed together do not
//   come back together. Three things cut that wait short, so that the cache is current
//   again soon after the apiserver is (an apiserver restart): a backoff ends when the
//   upstream comes back from an outage that began before or during it; a resumed watch
//   answered 410 relists at once (the upstream is up and answering; only the limiter
//   spaces it); a stream that broke after it had been open a while re-watches at once.
//
// Threading: start() runs the loop on its own std::jthread; stop() (also the destructor)
// interrupts a blocked watch through the stop token and joins. The ListerWatcher, store,
// clock and limiter are borrowed and must outlive the Reflector. stats() may be read from
// any thread.

#include <chrono>
#include <cstdint>
#include <atomic>
#include <functional>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "cache/clock.h"
#include "watch/reflector/backoff.h"
#include "watch/reflector/lister_watcher.h"
#include "watch/reflector/reflector_stats.h"
#include "watch/reflector/reflector_store.h"
#include "watch/reflector/relist_limiter.h"
#include "watch/upstream_health.h"
#include "watch/reflector/watch_event_decoder.h"

namespace watch {

// The Accept of a protobuf informer's LIST and watch (N2, W2).
extern const std::string kProtobufMediaType;
extern const std::string kProtobufWatchMediaType;

enum class LogLevel { Debug, Info, Warning, Error };
// Receives the reflector's log lines; cmd routes them to the process logger.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

struct ReflectorOptions {
  // Names the resource in log lines, e.g. "pods" or "apps/v1/deployments".
  std::string name;
  // Restricts what is cached; normally empty (the whole collection).
  std::string label_selector;
  std::string field_selector;
  // LIST page size: client-go's pager default, small enough that no single response
  // stalls the apiserver.
  int64_t page_size = 500;
  // Watches ask for timeoutSeconds uniform in [min, 2 min): client-go's choice
  // (defaultMinWatchTimeout 5 min), which spreads the re-watches of many reflectors.
  std::chrono::seconds min_watch_timeout{300};
  // A watch that ends cleanly sooner than this with no event counts as a failure
  // (client-go's "very short watch"), so a misbehaving upstream is not hammered.
  std::chrono::milliseconds very_short_watch{1000};
  // The encoding asked of the upstream and handed to the store (Accept of every list and
  // watch): protobuf caches only built-in types, which the apiserver serves in it.
  cache::Encoding encoding = cache::Encoding::Json;
  // Whether the first sync waits on the shared RelistLimiter too. An on-demand informer's
  // first sync is what a waiting client would otherwise ask the upstream itself, so it goes
  // at once; the limiter spaces the relists that failures bring on together.
  bool limit_first_sync = true;
  // Try watch-list first; set false for upstreams known not to support it.
  bool use_watch_list = true;
  BackoffOptions backoff;
  // Seeds jitter and watch timeouts; 0 picks a random seed.
  uint64_t seed = 0;
  LogSink log;
  // Warm restart: called once on the reflector thread before anything else. It may put
  // a saved state into the store (through the ReflectorStore, like a list) and returns
  // that state's RV, or 0 for none. The reflector then counts as synced (the state is
  // served) and resumes the watch from that RV instead of listing; 410 relists as usual.
  std::function<uint64_t(ReflectorStore& store)> warm_start;
  // A resumed watch has caught up once a bookmark arrives or, the upstream having sent
  // its backlog at once, the open stream has been quiet this long.
  std::chrono::milliseconds caught_up_quiet{500};
  // The upstream breaker, shared by every reflector (borrowed; null in tests): a backoff
  // taken while it is open ends as soon as the upstream is back.
  UpstreamHealth* upstream_health = nullptr;
};

class Reflector {
 public:
  Reflector(ReflectorOptions options, ListerWatcher& lister_watcher, ReflectorStore& store,
            cache::Clock& clock, RelistLimiter& relist_limiter);
  ~Reflector();
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  // Starts the loop on a new thread. Call at most once.
  void start();
  // Requests a stop and waits for the loop to end. Idempotent.
  void stop();
  // The loop itself, for callers that bring their own thread.
  void run(std::stop_token stop);

  // True once the first full state reached the store (client-go HasSynced).
  bool hasSynced() const { return stats_.synced.load(std::memory_order_acquire); }
  // True once the store is as fresh as a list would make it: after a list, or after a
  // warm start once the resumed watch has caught up (see ReflectorOptions). Readiness.
  bool caughtUp() const;
  // Drops the current watch and relists (drift repair). Any thread; returns at once.
  void requestRelist();
  const ReflectorStats& stats() const { return stats_; }

 private:
  // What the loop does after a list or watch attempt.
  struct Outcome {
    enum class Then { Watch, Relist, Stop };
    Then then = Then::Watch;
    bool backoff = false;
  };
  // State of one watch stream.
  struct Stream {
    // The watch resumes from an RV reached before this attempt (a re-watch, a warm
    // start), not from the list just made.
    bool resumed = false;
    uint64_t events = 0;      // events and bookmarks applied from this stream
    bool ended_by_us = false;  // `outcome` says why the stream was canceled
    Outcome outcome;
  };
  struct WatchListAttempt;
  // A full state being received: what has arrived so far, for progress logs.
  struct SyncProgress {
    cache::Clock::TimePoint started;
    cache::Clock::TimePoint last_report;
    uint64_t objects = 0;
    uint64_t bytes = 0;
    uint64_t expected = 0;  // 0: unknown
  };

  Outcome relist(std::stop_token stop);
  Outcome watchList(std::stop_token stop, bool& fall_back);
  // How a watch-list that ended before its sync goes on: relist and retry, or fall back to LIST.
  Outcome watchListEndedUnsynced(const WatchResult& result, bool& fall_back);
  Outcome listThenWatch(std::stop_token stop);
  Outcome watchFrom(uint64_t rv, std::stop_token stop, bool resumed);
  // Runs options_.warm_start; returns the saved RV (0: none, or the state was refused).
  uint64_t warmStart();
  void noteActivity();

  // Applies one decoded event of an established stream; false ends the stream.
  bool handleEvent(WatchEvent&& event, Stream& stream);
  bool handleLine(std::string_view line, Stream& stream);
  Outcome watchEnded(const WatchResult& result, const Stream& stream, cache::Clock::TimePoint started,
                     std::stop_token stop);
  // Maps an upstream failure status (ERROR event or HTTP) to what to do next; `resumed`
  // as Stream::resumed.
  Outcome failureStatus(int64_t code, std::string_view reason, std::string_view text, bool resumed = false);
  Outcome storeFailed(const StoreOutcome& status, std::string_view during);

  // Starts counting a full state; `expected` objects when known (0: the last sync's count).
  SyncProgress startSync(uint64_t expected = 0);
  // Counts one received object and logs progress every few seconds of a long sync.
  void progress(SyncProgress& sync, uint64_t object_bytes, std::string_view mode);
  // The count the upstream announced (the first page's remainingItemCount plus its items).
  void expectObjects(SyncProgress& sync, uint64_t expected);
  // `changed`: objects the new state added, modified or deleted (StoreOutcome).
  void markSynced(SyncMode mode, const SyncProgress& sync, uint64_t rv, uint64_t changed);
  ListOptions watchOptions();
  // Waits out a backoff; false when stopped.
  bool sleepBackoff(cache::Clock::Duration delay, std::stop_token stop);
  void log(LogLevel level, std::string_view message) const;

  ReflectorOptions options_;
  ListerWatcher& lister_watcher_;
  ReflectorStore& store_;
  cache::Clock& clock_;
  RelistLimiter& relist_limiter_;
  Backoff backoff_;
  std::mt19937_64 random_;
  WatchEventDecoder decoder_;
  ReflectorStats stats_;
  // Owned by the loop thread: the RV of the last event, bookmark or replace applied to
  // the store; 0 before the first sync. Never decreases between relists.
  uint64_t last_rv_ = 0;
  // Owned by the loop thread: false once the upstream refused watch-list; then every
  // relist uses paged LIST.
  bool watch_list_supported_;
  // Warm restart catch-up: a resumed watch is open and not yet caught up; the steady
  // clock ticks of its last line (or of its start).
  std::atomic<bool> resuming_{false};
  mutable std::atomic<bool> quiet_caught_up_{false};
  std::atomic<cache::Clock::Duration::rep> last_activity_{0};
  // requestRelist(): the flag, and the stop source of the attempt in progress.
  std::atomic<bool> relist_requested_{false};
  std::mutex attempt_mu_;
  std::stop_source* attempt_ = nullptr;  // guarded by attempt_mu_
  std::jthread thread_;
};

}  // namespace watch
