#pragma once
// ResourceState: one informer's saved state in --state-dir (warm restart, issue #7).
// load() runs on the reflector thread before the first sync (ReflectorOptions::warm_start)
// and puts a verified state file into the store; save() writes the store's current
// snapshot, from any thread, without holding the store's lock while it writes (the
// snapshot shares the objects; the writer keeps applying events meanwhile).
//
// A file that is missing starts cold quietly. A torn, truncated, corrupt, wrong-version,
// wrong-resource or other-upstream file, one not sealed with the configured key, or one
// whose objects the store refuses, is logged, counted in stats() and ignored: the
// reflector lists as on a cold start. Nothing of it is served. While the upstream's cluster
// identity is unknown (cache/state/state_file.h), nothing is loaded or saved.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "cache/clock.h"
#include "cache/encoding.h"
#include "cache/state/state_file.h"
#include "cache/thread_safe_store.h"
#include "watch/api_resource.h"
#include "watch/reflector/reflector.h"
#include "watch/reflector/reflector_store.h"

namespace watch {

struct ResourceStateStats {
  std::atomic<uint64_t> loads_total{0};          // saved states served at start-up
  std::atomic<uint64_t> load_failures_total{0};  // state files refused (then relisted)
  std::atomic<uint64_t> saves_total{0};
  std::atomic<uint64_t> save_failures_total{0};
  std::atomic<int64_t> last_save_unix_seconds{0};
  std::atomic<uint64_t> last_save_bytes{0};
};

cache::StateIdentity stateIdentity(const ApiResource& resource, const std::string& namespace_scope,
                                   bool strip_managed_fields, cache::Encoding encoding = cache::Encoding::Json);

class ResourceState {
 public:
  // `name` names the resource in log lines. `clock` is borrowed and must outlive this.
  ResourceState(std::string dir, cache::StateFileOptions options, cache::StateIdentity identity, std::string name,
                LogSink log, const cache::Clock& clock);

  // Loads the saved state into `store`; returns its RV, or 0 when there is none to use.
  uint64_t load(ReflectorStore& store);
  // Saves `store`'s current state (nothing before its first sync). Serialized.
  bool save(const cache::ThreadSafeStore& store);

  const ResourceStateStats& stats() const { return stats_; }
  const std::string& path() const { return path_; }

 private:
  void log(LogLevel level, const std::string& message) const;

  const std::string path_;
  const cache::StateFileOptions options_;
  const cache::StateIdentity identity_;
  const std::string name_;
  const LogSink log_;
  const cache::Clock& clock_;
  std::mutex save_mu_;
  ResourceStateStats stats_;
};

}  // namespace watch
