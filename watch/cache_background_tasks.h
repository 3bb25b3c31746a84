#pragma once
// CacheBackgroundTasks: the periodic work on every running informer that is not the
// reflector's (issue #7): saving its state for a warm restart (--state-save-interval)
// and checking it for drift against the upstream (--drift-check-interval), repairing
// drift with a relist. Either interval at zero turns that work off. With pack_history
// (--store-encoding compressed) it also packs each store's superseded versions every
// tick (issue #20), so deflating them never delays the reflectors or the readers.
//
// Threading: its own thread; each drift check uses a ListerWatcher of its own per
// informer (made by the same factory as the reflectors'), so it never shares the
// reflector's single-threaded one. saveAll() may be called from any thread.

#include <chrono>
#include <map>
#include <memory>
#include <stop_token>
#include <thread>
#include <vector>

#include "cache/clock.h"
#include "watch/drift_check.h"
#include "watch/informer_manager.h"

namespace watch {

struct CacheBackgroundTasksOptions {
  std::chrono::milliseconds state_save_interval{0};  // 0: saved only at shutdown (saveAll)
  std::chrono::milliseconds drift_check_interval{0};  // 0: no drift checks
  bool pack_history = false;
  // Also current objects no history event holds (--store-encoding compressed).
  bool pack_current = false;
  LogSink log;
};

class CacheBackgroundTasks {
 public:
  // Everything borrowed must outlive this object.
  CacheBackgroundTasks(CacheBackgroundTasksOptions options, InformerManager& manager, ListerWatcherFactory factory,
                   cache::Clock& clock);
  ~CacheBackgroundTasks();
  CacheBackgroundTasks(const CacheBackgroundTasks&) = delete;
  CacheBackgroundTasks& operator=(const CacheBackgroundTasks&) = delete;

  // Starts the thread when any interval is set.
  void start();
  void stop();
  // Saves the state of each of `informers` now (shutdown); returns how many were saved.
  static size_t saveAll(const std::vector<std::shared_ptr<Informer>>& informers);

 private:
  struct Tracked {
    std::weak_ptr<Informer> informer;
    std::unique_ptr<ListerWatcher> lister;  // made on the first check
    cache::Clock::TimePoint next_check;
  };

  void run(std::stop_token stop);
  void checkDrift(Informer& informer, Tracked& tracked, std::stop_token stop);
  void packHistories(const std::vector<std::shared_ptr<Informer>>& informers, std::stop_token stop);
  void log(LogLevel level, const std::string& message) const;

  const CacheBackgroundTasksOptions options_;
  InformerManager& manager_;
  const ListerWatcherFactory factory_;
  cache::Clock& clock_;
  std::map<const Informer*, Tracked> tracked_;  // loop thread only
  std::jthread thread_;
};

}  // namespace watch
