#include "watch/cache_background_tasks.h"

#include <malloc.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace watch {

CacheBackgroundTasks::CacheBackgroundTasks(CacheBackgroundTasksOptions options, InformerManager& manager,
                                   ListerWatcherFactory factory, cache::Clock& clock)
    : options_(std::move(options)), manager_(manager), factory_(std::move(factory)), clock_(clock) {}

CacheBackgroundTasks::~CacheBackgroundTasks() { stop(); }

void CacheBackgroundTasks::start() {
  if (options_.state_save_interval.count() <= 0 && options_.drift_check_interval.count() <= 0 &&
      !options_.pack_history) {
    return;
  }
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void CacheBackgroundTasks::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

size_t CacheBackgroundTasks::saveAll(const std::vector<std::shared_ptr<Informer>>& informers) {
  size_t saved = 0;
  for (const auto& informer : informers) saved += informer->saveState() ? 1 : 0;
  return saved;
}

void CacheBackgroundTasks::run(std::stop_token stop) {
  const bool saving = options_.state_save_interval.count() > 0;
  const bool checking = options_.drift_check_interval.count() > 0;
  // Wake often enough for the shorter interval, but never spin.
  // Packing every second keeps at most a second of old versions plain.
  std::chrono::milliseconds tick = std::chrono::seconds(1);
  if (saving) tick = std::min(tick, options_.state_save_interval);
  if (checking) tick = std::min(tick, options_.drift_check_interval);
  tick = std::max<std::chrono::milliseconds>(tick, std::chrono::milliseconds(50));
  auto next_save = clock_.now() + options_.state_save_interval;

  while (clock_.sleepFor(tick, stop)) {
    const auto informers = manager_.informers();
    const auto now = clock_.now();
    if (options_.pack_history) packHistories(informers, stop);
    if (saving && now >= next_save) {
      saveAll(informers);
      next_save = clock_.now() + options_.state_save_interval;
    }
    if (!checking) continue;
    // Forget informers that are gone (idle, forbidden); their listers go with them.
    for (auto it = tracked_.begin(); it != tracked_.end();) {
      const bool running = std::any_of(informers.begin(), informers.end(),
                                       [&](const auto& informer) { return informer.get() == it->first; });
      it = running ? std::next(it) : tracked_.erase(it);
    }
    for (const auto& informer : informers) {
      if (stop.stop_requested()) return;
      auto [it, added] = tracked_.try_emplace(informer.get());
      Tracked& tracked = it->second;
      if (added) {
        tracked.informer = informer;
        tracked.next_check = now + options_.drift_check_interval;
        continue;
      }
      if (clock_.now() < tracked.next_check) continue;
      // A resource still catching up (or relisting) is not compared: it is expected to differ.
      if (informer->caughtUp()) checkDrift(*informer, tracked, stop);
      tracked.next_check = clock_.now() + options_.drift_check_interval;
    }
  }
}

void CacheBackgroundTasks::packHistories(const std::vector<std::shared_ptr<Informer>>& informers,
                                         std::stop_token stop) {
  // Batches bound how long the store's exclusive lock is held to swap them in.
  constexpr size_t kBatch = 1024;
  size_t swapped = 0;  // current objects packed or cooled
  for (const auto& informer : informers) {
    while (!stop.stop_requested() && informer->packHistory(kBatch) == kBatch) {
    }
    // Current objects: at most kMaxCurrentBatches per tick, so that a first sync of many
    // objects (deflated at ~250 MB/s) does not hold up the other tasks.
    constexpr int kMaxCurrentBatches = 16;
    for (int i = 0; options_.pack_current && i < kMaxCurrentBatches && !stop.stop_requested(); ++i) {
      const size_t found = informer->packCurrent(kBatch);
      swapped += found;
      if (found < kBatch) break;
    }
  }
  // The plain bytes just freed sit between live allocations, where glibc keeps them for
  // reuse: a cache that is read little would never get them back. Hand them to the
  // kernel after a large pass (a sync, a LIST that inflated much).
  constexpr size_t kTrimAfter = 1024;
  if (swapped >= kTrimAfter) malloc_trim(0);
}

void CacheBackgroundTasks::checkDrift(Informer& informer, Tracked& tracked, std::stop_token stop) {
  DriftStats& stats = informer.driftStats();
  DriftReport report;
  try {
    if (!tracked.lister) tracked.lister = factory_(informer.resource(), informer.namespaceScope());
    report = watch::checkDrift(*tracked.lister, informer.store(), {}, stop);
  } catch (const std::exception& e) {
    report = DriftReport{DriftReport::Outcome::Unavailable, 0, 0, {}, e.what()};
  }
  if (stop.stop_requested()) return;
  stats.checks_total.fetch_add(1, std::memory_order_relaxed);
  stats.last_check_unix_seconds.store(
      std::chrono::duration_cast<std::chrono::seconds>(clock_.wallNow().time_since_epoch()).count(),
      std::memory_order_relaxed);
  switch (report.outcome) {
    case DriftReport::Outcome::Same:
      log(LogLevel::Debug, informer.name() + ": no drift at resourceVersion " + std::to_string(report.resource_version));
      return;
    case DriftReport::Outcome::Unavailable:
      // Typically 410: the cache RV left the upstream's window; the next check takes a
      // fresh one.
      stats.check_failures_total.fetch_add(1, std::memory_order_relaxed);
      log(LogLevel::Info, informer.name() + ": drift check skipped: " + report.error);
      return;
    case DriftReport::Outcome::Differs: {
      stats.drifts_total.fetch_add(1, std::memory_order_relaxed);
      std::string keys;
      for (const auto& key : report.keys) keys += (keys.empty() ? "" : ", ") + key;
      if (report.differences > report.keys.size()) keys += ", ...";
      log(LogLevel::Warning, informer.name() + ": drift at resourceVersion " + std::to_string(report.resource_version) +
                                 ": " + std::to_string(report.differences) + " objects differ from the upstream (" +
                                 keys + "); relisting");
      informer.requestRelist();
      return;
    }
  }
}

void CacheBackgroundTasks::log(LogLevel level, const std::string& message) const {
  if (options_.log) options_.log(level, message);
}

}  // namespace watch
