#pragma once
// Informer: one cached resource (apiserver Cacher, client-go SharedInformer): the store,
// the parser that fills it, the dispatcher that fans its events out, and the reflector
// that keeps it equal to the upstream, all for one GroupVersionResource, either for
// the whole collection or for one namespace.
//
// Owned by the InformerManager through a shared_ptr; the serving side holds the same
// shared_ptr (as a CachedResource) while it reads, and a downstream watch holds it for
// its whole life. The manager reads use_count() to tell "in use" from idle.
//
// Thread-safe: CachedResource methods and the status accessors may be called from any
// thread; start() and stop() from the manager's thread.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "cache/clock.h"
#include "cache/object_parser.h"
#include "cache/state/state_file.h"
#include "cache/thread_safe_store.h"
#include "watch/cached_resource.h"
#include "watch/freshness.h"
#include "watch/reflector/lister_watcher.h"
#include "watch/reflector/reflector.h"
#include "watch/reflector/relist_limiter.h"
#include "watch/resource_state.h"
#include "watch/store_adapter.h"
#include "watch/fanout/watch_dispatcher.h"

namespace watch {

struct InformerOptions {
  // What discovery said; field_spec must be set.
  ApiResource resource;
  // "" for the whole collection, else the one namespace cached.
  std::string namespace_scope;
  // The encoding the informer lists, watches and stores in (protobuf: built-in types
  // only; custom indexes by JSON path are not kept then).
  cache::Encoding encoding = cache::Encoding::Json;
  // Ingestion transform: drop metadata.managedFields (off by default: the proxy is
  // transparent unless told otherwise).
  bool strip_managed_fields = false;
  // Custom indexes by JSON path (name, path); each also becomes a store index.
  std::vector<cache::SelectableField> index_paths;
  cache::EventHistoryOptions history;
  // Template for the reflector; its name is set from the resource.
  ReflectorOptions reflector;
  // Started on demand (may be stopped when idle) rather than configured.
  bool on_demand = false;
  // Warm restart: the directory of the saved state (loaded before the first sync,
  // written by saveState()); "" = off. Its files are checked against and sealed with
  // `state_file` (the upstream's identity, the key).
  std::string state_dir;
  cache::StateFileOptions state_file;
};

// Drift checks of one informer (watch/drift_check.h), for metrics.
struct DriftStats {
  std::atomic<int64_t> last_check_unix_seconds{0};
  std::atomic<uint64_t> checks_total{0};
  std::atomic<uint64_t> drifts_total{0};
  std::atomic<uint64_t> check_failures_total{0};
};

class Informer final : public CachedResource {
 public:
  // The clock and the limiter are borrowed and must outlive the informer.
  Informer(InformerOptions options, std::unique_ptr<ListerWatcher> lister_watcher, cache::Clock& clock,
           RelistLimiter& relist_limiter);
  ~Informer() override;
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Starts the reflector on its own thread.
  void start();
  // Stops the reflector and waits for it. Idempotent. Readers may keep using the store.
  void stop();

  // watch::CachedResource
  const ApiResource& resource() const override { return options_.resource; }
  const std::string& namespaceScope() const override { return options_.namespace_scope; }
  cache::Encoding encoding() const override { return options_.encoding; }
  const cache::ThreadSafeStore& store() const override { return store_; }
  bool hasSynced() const override { return reflector_->hasSynced(); }
  WatchDispatcher& dispatcher() override { return dispatcher_; }
  const WatchDispatcher& dispatcher() const override { return dispatcher_; }
  FreshnessProofs& freshness() const override { return freshness_; }
  ProbeFlights& probes() const override { return probes_; }
  const cache::Clock& clock() const override { return clock_; }
  void markUsed() override;

  // The upstream answered 403 Forbidden to a list or watch of this collection: the
  // manager drops the informer (and, cluster-wide, falls back to namespaces).
  bool forbidden() const { return forbidden_.load(std::memory_order_acquire); }
  // The upstream answered a LIST of this collection with 406 Not Acceptable: it does not
  // serve the informer's encoding for it; the manager drops the informer.
  bool notAcceptable() const { return not_acceptable_.load(std::memory_order_acquire); }
  bool onDemand() const { return options_.on_demand; }
  cache::Clock::TimePoint lastUsed() const;
  const ReflectorStats& reflectorStats() const { return reflector_->stats(); }
  // Readiness: listed, or warm-started and caught up with the upstream since.
  bool caughtUp() const { return reflector_->caughtUp(); }
  // Drift repair: relist now (a relist that changed the store ends the watches from before it).
  void requestRelist() { reflector_->requestRelist(); }
  // Writes the current state to state_dir; false when off, not synced or failed.
  bool saveState();
  // Packs up to `max_versions` superseded versions in the store's history (issue #20).
  size_t packHistory(size_t max_versions) { return store_.packHistory(max_versions); }
  size_t packCurrent(size_t max_objects) { return store_.packCurrent(max_objects); }
  // Null when state_dir is off.
  const ResourceStateStats* stateStats() const { return state_ ? &state_->stats() : nullptr; }
  DriftStats& driftStats() { return drift_stats_; }
  const DriftStats& driftStats() const { return drift_stats_; }
  // "pods", "deployments.apps in namespace web": for logs.
  const std::string& name() const { return name_; }

 private:
  class ObservedListerWatcher;

  static cache::StoreOptions storeOptions(const InformerOptions& options);
  static std::unique_ptr<cache::ObjectParser> makeParser(const InformerOptions& options);

  InformerOptions options_;
  std::string name_;
  cache::Clock& clock_;
  std::atomic<bool> forbidden_{false};
  std::atomic<bool> not_acceptable_{false};
  std::atomic<cache::Clock::Duration::rep> last_used_;  // clock_.now().time_since_epoch() ticks
  cache::ThreadSafeStore store_;
  std::unique_ptr<cache::ObjectParser> parser_;
  WatchDispatcher dispatcher_;
  // Thread-safe bookkeeping that readers update (const access from the serving side).
  mutable FreshnessProofs freshness_;
  mutable ProbeFlights probes_;
  StoreAdapter adapter_;
  std::unique_ptr<ListerWatcher> lister_watcher_;  // ObservedListerWatcher around the upstream's
  std::unique_ptr<ResourceState> state_;  // null when state_dir is off
  DriftStats drift_stats_;
  std::unique_ptr<Reflector> reflector_;
};

}  // namespace watch
