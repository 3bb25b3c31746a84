#include "watch/reflector/reflector.h"

#include <cstdio>
#include <exception>
#include <string>
#include <utility>

namespace watch {

const std::string kProtobufMediaType = "application/vnd.kubernetes.protobuf";
const std::string kProtobufWatchMediaType = "application/vnd.kubernetes.protobuf;stream=watch";
namespace {

// How often a long initial sync reports progress: often enough to show a 1 GB list is
// moving, rare enough to stay out of the way of normal (sub-second) syncs.
constexpr auto kSyncProgressInterval = std::chrono::seconds(10);

uint64_t pickSeed(uint64_t seed) {
  if (seed != 0) return seed;
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

bool isTooLargeResourceVersion(std::string_view text) {
  // client-go matches the cause type, or the message for old servers (contract R7).
  return text.find("ResourceVersionTooLarge") != std::string_view::npos ||
         text.find("Too large resource version") != std::string_view::npos;
}

}  // namespace

Reflector::Reflector(ReflectorOptions options, ListerWatcher& lister_watcher,
                     ReflectorStore& store, cache::Clock& clock, RelistLimiter& relist_limiter)
    : options_(std::move(options)),
      lister_watcher_(lister_watcher),
      store_(store),
      clock_(clock),
      relist_limiter_(relist_limiter),
      backoff_(options_.backoff, clock, pickSeed(options_.seed)),
      random_(pickSeed(options_.seed) ^ 0x9e3779b97f4a7c15ULL),
      decoder_(options_.encoding),
      watch_list_supported_(options_.use_watch_list) {}

Reflector::~Reflector() { stop(); }

void Reflector::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Reflector::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

void Reflector::run(std::stop_token stop) {
  bool need_relist = true;
  // A warm start's first watch resumes the saved state; it is not a re-watch.
  bool first_watch = false;
  if (options_.warm_start && warmStart() > 0) {
    need_relist = false;
    first_watch = true;
  }
  while (!stop.stop_requested()) {
    if (relist_requested_.exchange(false)) need_relist = true;
    // Each attempt has its own stop source, so requestRelist() can end it without
    // stopping the loop; a stop of the loop reaches it through the callback.
    std::stop_source attempt;
    {
      std::lock_guard lock(attempt_mu_);
      attempt_ = &attempt;
    }
    Outcome outcome;
    {
      std::stop_callback forward(stop, [&attempt] { attempt.request_stop(); });
      try {
        if (need_relist) {
          outcome = relist(attempt.get_token());
        } else {
          if (!first_watch) stats_.upstream_watch_restarts_total.fetch_add(1, std::memory_order_relaxed);
          first_watch = false;
          outcome = watchFrom(last_rv_, attempt.get_token(), true);
        }
      } catch (const std::exception& e) {
        // Nothing may escape the thread; start over from a clean state instead.
        stats_.loop_errors_total.fetch_add(1, std::memory_order_relaxed);
        log(LogLevel::Error, std::string("unexpected error, relisting: ") + e.what());
        outcome = {Outcome::Then::Relist, true};
      } catch (...) {
        stats_.loop_errors_total.fetch_add(1, std::memory_order_relaxed);
        log(LogLevel::Error, "unexpected non-standard exception, relisting");
        outcome = {Outcome::Then::Relist, true};
      }
    }
    {
      std::lock_guard lock(attempt_mu_);
      attempt_ = nullptr;
    }
    if (outcome.then == Outcome::Then::Stop) {
      if (stop.stop_requested() || !relist_requested_.exchange(false)) break;
      outcome = {Outcome::Then::Relist, false};
    }
    need_relist = outcome.then == Outcome::Then::Relist;
    if (outcome.backoff) {
      stats_.upstream_backoffs_total.fetch_add(1, std::memory_order_relaxed);
      const auto delay = backoff_.next();
      log(LogLevel::Debug, "backing off " +
                               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(delay).count()) +
                               " ms before " + (need_relist ? "relisting" : "re-watching"));
      if (!sleepBackoff(delay, stop)) break;
    }
  }
}

void Reflector::requestRelist() {
  stats_.requested_relists_total.fetch_add(1, std::memory_order_relaxed);
  relist_requested_.store(true);
  std::lock_guard lock(attempt_mu_);
  if (attempt_ != nullptr) attempt_->request_stop();
}

uint64_t Reflector::warmStart() {
  uint64_t rv = 0;
  try {
    rv = options_.warm_start(store_);
  } catch (const std::exception& e) {
    log(LogLevel::Warning, std::string("saved state not loaded: ") + e.what());
    rv = 0;
  }
  if (rv == 0) return 0;
  last_rv_ = rv;
  stats_.mode.store(SyncMode::Saved, std::memory_order_relaxed);
  stats_.warm_start_resource_version.store(rv, std::memory_order_relaxed);
  stats_.synced.store(true, std::memory_order_release);
  log(LogLevel::Info, "serving the saved state at resourceVersion " + std::to_string(rv) +
                          "; resuming the watch from it");
  return rv;
}

void Reflector::noteActivity() {
  last_activity_.store(clock_.now().time_since_epoch().count(), std::memory_order_release);
}

bool Reflector::caughtUp() const {
  if (stats_.caught_up.load(std::memory_order_acquire) || quiet_caught_up_.load(std::memory_order_acquire)) return true;
  if (!resuming_.load(std::memory_order_acquire)) return false;
  const cache::Clock::Duration quiet(clock_.now().time_since_epoch().count() - last_activity_.load(std::memory_order_acquire));
  if (quiet < options_.caught_up_quiet) return false;
  // Latched: readiness does not flap when the next event arrives.
  quiet_caught_up_.store(true, std::memory_order_release);
  return true;
}

Reflector::Outcome Reflector::watchFrom(uint64_t rv, std::stop_token stop, bool resumed) {
  ListOptions opts = watchOptions();
  opts.resource_version = std::to_string(rv);
  Stream stream;
  stream.resumed = resumed;
  const auto started = clock_.now();
  // A warm start's watch delivers the backlog since the saved RV; caughtUp() watches it drain.
  const bool catching_up = !caughtUp();
  if (catching_up) {
    noteActivity();
    resuming_.store(true, std::memory_order_release);
  }
  const WatchResult result = lister_watcher_.watch(
      opts, [this, &stream](std::string_view line) { return handleLine(line, stream); }, stop);
  resuming_.store(false, std::memory_order_release);
  return watchEnded(result, stream, started, stop);
}

bool Reflector::handleLine(std::string_view line, Stream& stream) {
  if (resuming_.load(std::memory_order_relaxed)) noteActivity();
  // The steady state: the store parses and applies object events straight from the line.
  if (LineApplied applied = store_.applyEventLine(line, last_rv_); applied.handled) {
    if (applied.status.code == StoreOutcome::Code::ResourceVersionWentBackwards) {
      stats_.resource_version_backwards_total.fetch_add(1, std::memory_order_relaxed);
      log(LogLevel::Warning, std::string(cache::wireName(applied.type)) + " at resourceVersion " +
                                 std::to_string(applied.resource_version) + " is not after " +
                                 std::to_string(last_rv_) + ", relisting");
      stream.ended_by_us = true;
      stream.outcome = {Outcome::Then::Relist, true};
      return false;
    }
    if (!applied.status.ok()) {
      stream.ended_by_us = true;
      stream.outcome = storeFailed(applied.status, "applying an event");
      return false;
    }
    last_rv_ = applied.resource_version;
    stats_.events_applied_total.fetch_add(1, std::memory_order_relaxed);
    ++stream.events;
    return true;
  }
  DecodeResult decoded = decoder_.decode(line);
  if (!decoded.event) {
    stats_.malformed_events_total.fetch_add(1, std::memory_order_relaxed);
    log(LogLevel::Warning, "malformed watch event, relisting: " + decoded.error);
    stream.ended_by_us = true;
    stream.outcome = {Outcome::Then::Relist, true};
    return false;
  }
  return handleEvent(std::move(*decoded.event), stream);
}

bool Reflector::handleEvent(WatchEvent&& event, Stream& stream) {
  auto end = [&stream](Outcome outcome) {
    stream.ended_by_us = true;
    stream.outcome = outcome;
    return false;
  };
  switch (event.type) {
    case EventType::Added:
    case EventType::Modified:
    case EventType::Deleted: {
      // After the initial state, RVs on one stream strictly increase (contract W11).
      if (event.resource_version <= last_rv_) {
        stats_.resource_version_backwards_total.fetch_add(1, std::memory_order_relaxed);
        log(LogLevel::Warning, std::string(cache::wireName(event.type)) + " at resourceVersion " +
                                   std::to_string(event.resource_version) + " is not after " +
                                   std::to_string(last_rv_) + ", relisting");
        return end({Outcome::Then::Relist, true});
      }
      StoreOutcome status = store_.apply(event.type, std::move(event.object), event.resource_version);
      if (!status.ok()) return end(storeFailed(status, "applying an event"));
      last_rv_ = event.resource_version;
      stats_.events_applied_total.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    case EventType::Bookmark: {
      // Bookmarks never go backwards (W11); an equal RV just carries no news.
      if (event.resource_version < last_rv_) {
        stats_.resource_version_backwards_total.fetch_add(1, std::memory_order_relaxed);
        log(LogLevel::Warning, "bookmark at resourceVersion " + std::to_string(event.resource_version) +
                                   " is before " + std::to_string(last_rv_) + ", relisting");
        return end({Outcome::Then::Relist, true});
      }
      if (!event.object.empty()) store_.observeBookmarkObject(event.object);
      StoreOutcome status = store_.bookmark(event.resource_version);
      if (!status.ok()) return end(storeFailed(status, "applying a bookmark"));
      last_rv_ = event.resource_version;
      // The upstream has sent everything up to here: a resumed watch has caught up.
      stats_.caught_up.store(true, std::memory_order_release);
      stats_.bookmarks_total.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    case EventType::Error:
      log(LogLevel::Info, "watch ended with ERROR " + std::to_string(event.status_code) + " " +
                              event.status_reason + ": " + event.status_message);
      return end(failureStatus(event.status_code, event.status_reason, event.status_message, stream.resumed));
  }
  ++stream.events;
  return true;
}

Reflector::Outcome Reflector::watchEnded(const WatchResult& result, const Stream& stream,
                                         cache::Clock::TimePoint started, std::stop_token stop) {
  if (stop.stop_requested() || result.end == WatchEnd::Stopped) return {Outcome::Then::Stop, false};
  if (stream.ended_by_us) return stream.outcome;
  switch (result.end) {
    case WatchEnd::Closed:
      if (stream.events == 0 && clock_.now() - started < options_.very_short_watch) {
        log(LogLevel::Warning, "very short watch: closed with no events, backing off");
        return {Outcome::Then::Watch, true};
      }
      return {Outcome::Then::Watch, false};
    case WatchEnd::HttpError:
      log(LogLevel::Info, "watch refused with HTTP " + std::to_string(result.status));
      return failureStatus(result.status, "", result.body, stream.resumed);
    case WatchEnd::TransportError:
      log(LogLevel::Info, "watch failed: " + result.transport_error);
      // A stream cut after it began (EOF, reset) is a close to client-go's StreamWatcher:
      // re-watch at once. Backing off here let a few dropped watches (apiserver rolling,
      // a load balancer's idle cut) grow the delay for the outage that may follow. A
      // quiet stream counts as begun once it outlived a very short watch.
      if ((result.lines > 0 && stream.events > 0) || clock_.now() - started >= options_.very_short_watch) {
        return {Outcome::Then::Watch, false};
      }
      return {Outcome::Then::Watch, true};
    case WatchEnd::Canceled:
    case WatchEnd::Stopped:
      break;
  }
  return {Outcome::Then::Relist, true};
}

Reflector::Outcome Reflector::failureStatus(int64_t code, std::string_view reason, std::string_view text,
                                            bool resumed) {
  // A resumed watch's RV is gone (the apiserver restarted and rebuilt its cache, or etcd
  // compacted it): the upstream answers, so the relist goes at once, spaced only by the
  // limiter. The watch of a list just made that gets 410 backs off, so an upstream that
  // always answers so cannot turn this into a loop.
  if (code == 410 || reason == "Expired" || reason == "Gone") return {Outcome::Then::Relist, !resumed};
  if (code == 504 && isTooLargeResourceVersion(text)) return {Outcome::Then::Relist, true};
  // Overload and outages: the last RV is still good, so keep it and try again later.
  if (code == 429 || code >= 500) return {Outcome::Then::Watch, true};
  return {Outcome::Then::Relist, true};
}

Reflector::Outcome Reflector::storeFailed(const StoreOutcome& status, std::string_view during) {
  stats_.store_errors_total.fetch_add(1, std::memory_order_relaxed);
  if (status.code == StoreOutcome::Code::ResourceVersionWentBackwards) {
    stats_.resource_version_backwards_total.fetch_add(1, std::memory_order_relaxed);
  }
  log(LogLevel::Warning, "store refused " + std::string(during) + ", relisting: " + status.message);
  return {Outcome::Then::Relist, true};
}

Reflector::SyncProgress Reflector::startSync(uint64_t expected) {
  const auto now = clock_.now();
  if (expected == 0) expected = stats_.last_sync_objects.load(std::memory_order_relaxed);
  const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.wallNow().time_since_epoch());
  stats_.sync_objects.store(0, std::memory_order_relaxed);
  stats_.sync_bytes.store(0, std::memory_order_relaxed);
  stats_.sync_expected_objects.store(expected, std::memory_order_relaxed);
  stats_.sync_started_unix_ms.store(wall.count(), std::memory_order_release);
  return {now, now, 0, 0, expected};
}

void Reflector::expectObjects(SyncProgress& sync, uint64_t expected) {
  sync.expected = expected;
  stats_.sync_expected_objects.store(expected, std::memory_order_relaxed);
}

void Reflector::progress(SyncProgress& sync, uint64_t object_bytes, std::string_view mode) {
  ++sync.objects;
  sync.bytes += object_bytes;
  stats_.sync_objects.store(sync.objects, std::memory_order_relaxed);
  stats_.sync_bytes.store(sync.bytes, std::memory_order_relaxed);
  const auto now = clock_.now();
  if (now - sync.last_report < kSyncProgressInterval) return;
  sync.last_report = now;
  const double seconds = std::chrono::duration<double>(now - sync.started).count();
  const double rate = seconds > 0 ? double(sync.objects) / seconds : 0;
  char expected[96] = "";
  if (sync.expected > sync.objects && rate > 0) {
    std::snprintf(expected, sizeof expected, " of ~%llu (%.0f %%), ~%.0f s left",
                  static_cast<unsigned long long>(sync.expected), 100.0 * double(sync.objects) / double(sync.expected),
                  double(sync.expected - sync.objects) / rate);
  }
  char text[256];
  std::snprintf(text, sizeof text, "%.*s: %llu objects%s, %.1f MB in %.1f s (%.0f objects/s, %.1f MB/s)",
                static_cast<int>(mode.size()), mode.data(), static_cast<unsigned long long>(sync.objects), expected,
                static_cast<double>(sync.bytes) / 1e6, seconds, rate,
                seconds > 0 ? static_cast<double>(sync.bytes) / 1e6 / seconds : 0.0);
  log(LogLevel::Info, text);
}

void Reflector::markSynced(SyncMode mode, const SyncProgress& sync, uint64_t rv, uint64_t changed) {
  // The backoff is deliberately not reset here: an upstream that lists fine but breaks
  // every watch must not turn into a relist loop at the initial delay.
  last_rv_ = rv;
  const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(
      clock_.wallNow().time_since_epoch());
  stats_.mode.store(mode, std::memory_order_relaxed);
  stats_.last_sync_objects.store(sync.objects, std::memory_order_relaxed);
  stats_.last_sync_resource_version.store(rv, std::memory_order_relaxed);
  stats_.last_sync_unix_ms.store(wall.count(), std::memory_order_relaxed);
  stats_.synced.store(true, std::memory_order_release);
  stats_.caught_up.store(true, std::memory_order_release);
  stats_.sync_started_unix_ms.store(0, std::memory_order_release);

  const std::chrono::duration<double> took = clock_.now() - sync.started;
  char text[256];
  std::snprintf(text, sizeof text, "synced %llu objects (%.1f MB) at resourceVersion %llu in %.2f s via %s%s",
                static_cast<unsigned long long>(sync.objects), static_cast<double>(sync.bytes) / 1e6,
                static_cast<unsigned long long>(rv), took.count(), mode == SyncMode::WatchList ? "watch-list" : "list",
                changed > 0 ? "; it changed objects, so the watches from before it were ended" : "");
  log(LogLevel::Info, text);
}

bool Reflector::sleepBackoff(cache::Clock::Duration delay, std::stop_token stop) {
  // After an outage the watch resumes from its last RV as soon as the upstream answers
  // again, instead of sleeping out a backoff that grew during the outage (up to a minute),
  // also when the outage began while we slept (our first failure was the apiserver going
  // away). Relists still wait on the RelistLimiter, so only cheap re-watches start together.
  if (UpstreamHealth* health = options_.upstream_health) {
    // Back after an outage: failures during it say nothing about the upstream now.
    if (health->waitForRecovery(delay, stop)) backoff_.reset();
    return !stop.stop_requested();
  }
  return clock_.sleepFor(delay, stop);
}

ListOptions Reflector::watchOptions() {
  ListOptions opts;
  opts.label_selector = options_.label_selector;
  opts.field_selector = options_.field_selector;
  opts.allow_watch_bookmarks = true;
  if (options_.encoding == cache::Encoding::Protobuf) opts.accept = kProtobufWatchMediaType;
  const int64_t min = options_.min_watch_timeout.count();
  std::uniform_int_distribution<int64_t> spread(min, 2 * min - 1);
  opts.timeout_seconds = min > 0 ? spread(random_) : 0;
  return opts;
}

void Reflector::log(LogLevel level, std::string_view message) const {
  if (!options_.log) return;
  std::string line = options_.name;
  line += ": ";
  line += message;
  options_.log(level, line);
}

}  // namespace watch
