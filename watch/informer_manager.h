#pragma once
// InformerManager: decides which resources are cached and runs one Informer for each
// (issue #4; contract K1, K2, W9 through the Reflector).
//
// - Discovery decides what exists, its kind and scope; nothing is cached without the
//   list and watch verbs, and discovery already leaves out subresources and aggregated
//   APIs. The deny list always wins.
// - Configured resources start once discovery answers and are never stopped; /readyz
//   waits for them (ready()).
// - On demand: the first find() for a cacheable resource queues its informer and returns
//   null (that request passes through); later finds return it. An on-demand informer
//   nobody asked for during idle_timeout and held by nobody else (use_count) is stopped
//   and its memory freed.
// - A request that negotiated protobuf (N2) is answered from a protobuf informer of its
//   own, started on demand like any other (with on-demand caching off, a configured
//   resource's JSON cache answers such a client in JSON); custom resources have none, the
//   apiserver serves them in JSON.
// - A collection whose list is forbidden (403) falls back to per-namespace informers for
//   the namespaces requests name; cluster-wide requests for it then pass through.
//
// Threading: find(), ready() and informers() may be called from any thread and never
// block on the upstream (find() runs on io threads). Discovery, starting and stopping
// informers happen on the manager's own thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cache/clock.h"
#include "cache/state/state_file.h"
#include "watch/discovery.h"
#include "watch/informer.h"
#include "watch/informer_registry.h"

namespace watch {

// A resource named in the configuration ("pods", "deployments.apps") and how to cache it.
struct ConfiguredResource {
  std::string group;  // "" for core
  std::string resource;
  std::vector<std::string> namespaces;  // empty: the whole collection
  bool strip_managed_fields = false;
  std::vector<cache::SelectableField> index_paths;  // custom indexes: name and JSON path
  // Cached from start-up (readiness waits for it); false: only these options, applied
  // whenever the resource is cached on demand.
  bool start = true;
};

// A resource discovery lists that no informer caches (cluster-wide), and why.
struct NotCachedResource {
  std::string group, version, resource;
  std::string reason;
};

struct GroupResourceName {
  std::string group;
  std::string resource;
};

// Builds the upstream ListerWatcher for one collection (the whole resource, or one
// namespace of it). cmd injects HttpListerWatcher; tests inject fakes. May throw.
using ListerWatcherFactory =
    std::function<std::unique_ptr<ListerWatcher>(const ApiResource& resource, const std::string& namespace_name)>;

struct InformerManagerOptions {
  std::vector<ConfiguredResource> configured;
  std::vector<GroupResourceName> deny;
  bool on_demand = true;
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
  // How often the manager looks for idle and forbidden informers.
  std::chrono::milliseconds housekeeping_interval{std::chrono::seconds(1)};
  // Discovery is retried this often while it fails, and at most this often when a find()
  // names a resource it has not seen (a CRD created after start-up).
  std::chrono::milliseconds rediscovery_interval{std::chrono::seconds(30)};
  // Per-namespace informers started on demand (after a forbidden cluster-wide list), in all:
  // each is a thread, a LIST and a WATCH, and any namespace name in a request would start
  // one. Beyond it such reads pass through.
  size_t max_namespace_informers = 64;
  // A namespace informer refused by the upstream (403) is not tried again for this long,
  // doubling per refusal up to max_refusal_backoff, so requests naming forbidden
  // namespaces do not spend the relist budget the real caches need.
  std::chrono::milliseconds refusal_backoff{std::chrono::minutes(1)};
  std::chrono::milliseconds max_refusal_backoff{std::chrono::minutes(30)};
  cache::EventHistoryOptions history;
  // Template for every reflector (backoff, watch timeouts, log sink).
  ReflectorOptions reflector;
  // Warm restart: where each informer's state is saved and loaded ("" = off), for which
  // upstream and with which key.
  std::string state_dir;
  cache::StateFileOptions state_file;
  LogSink log;
};

class InformerManager final : public InformerRegistry {
 public:
  // Everything borrowed must outlive the manager.
  InformerManager(InformerManagerOptions options, Discovery& discovery, ListerWatcherFactory factory,
                  cache::Clock& clock, RelistLimiter& relist_limiter);
  ~InformerManager() override;
  InformerManager(const InformerManager&) = delete;
  InformerManager& operator=(const InformerManager&) = delete;

  // Starts the manager's thread: discovery, then the configured informers.
  void start();
  // Stops every informer and the thread. Idempotent. Readers holding a CachedResource
  // keep a readable (no longer updated) store.
  void stop();

  // watch::InformerRegistry
  std::shared_ptr<CachedResource> find(std::string_view group, std::string_view version, std::string_view resource,
                                       std::string_view namespace_name,
                                       cache::Encoding encoding = cache::Encoding::Json) override;
  std::shared_ptr<CachedResource> findRunning(std::string_view group, std::string_view version,
                                              std::string_view resource, std::string_view namespace_name,
                                              cache::Encoding encoding = cache::Encoding::Json) override;
  bool known(std::string_view group, std::string_view version, std::string_view resource) const override;
  bool cacheableInProtobuf(std::string_view group, std::string_view version, std::string_view resource) override;
  bool starting(std::string_view group, std::string_view version, std::string_view resource,
                std::string_view namespace_name, cache::Encoding encoding) override;
  const cache::ChangeSignal* informersChanged() const override { return &informers_changed_; }

  // True once discovery answered and every configured resource has synced (or was
  // found not cacheable: unknown, denied, forbidden, without list/watch).
  bool ready() const;
  // The running informers, for metrics.
  std::vector<std::shared_ptr<Informer>> informers() const;
  // Every resource discovery lists (its preferred version) without a cluster-wide
  // informer, with the reason an operator can act on (/debug/status).
  std::vector<NotCachedResource> notCached() const;
  // Rounds of the manager's loop completed (discovery, starts, idle and 403 checks), so
  // tests can wait for "one more round" instead of sleeping.
  uint64_t roundsForTest() const { return rounds_.load(std::memory_order_acquire); }

 private:
  struct StartRequest {
    ApiResource resource;
    std::string namespace_name;
    bool on_demand = true;
    cache::Encoding encoding = cache::Encoding::Json;
  };

  void run(std::stop_token stop);
  std::shared_ptr<CachedResource> findLocked(std::string_view group, std::string_view version, std::string_view resource,
                                             std::string_view namespace_name, bool start, cache::Encoding encoding);
  // Runs discovery with mu_ released around the upstream call.
  void discoverLocked(std::unique_lock<std::mutex>& lock, std::stop_token stop);
  void startConfiguredLocked();
  void startInformer(StartRequest request, std::stop_token stop);
  // Removes forbidden and idle informers and returns them; the caller stops them without
  // holding mu_ (stopping joins a thread).
  std::vector<std::shared_ptr<Informer>> collectStoppableLocked();

  bool deniedLocked(std::string_view group, std::string_view resource) const;
  const ConfiguredResource* configuredFor(std::string_view group, std::string_view resource) const;
  bool cacheableLocked(const ApiResource& resource) const;
  void enqueueLocked(const ApiResource& resource, std::string namespace_name, bool on_demand,
                     cache::Encoding encoding = cache::Encoding::Json);
  void log(LogLevel level, const std::string& message) const;

  const InformerManagerOptions options_;
  Discovery& discovery_;
  const ListerWatcherFactory factory_;
  cache::Clock& clock_;
  RelistLimiter& relist_limiter_;

  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  // key "group/version/resource" -> what discovery says.
  std::map<std::string, ApiResource, std::less<>> discovered_;  // guarded by mu_
  std::vector<ApiResource> discovered_order_;                   // guarded by mu_; preferred versions first
  bool discovered_once_ = false;                                // guarded by mu_
  bool rediscover_ = false;                                     // guarded by mu_
  cache::Clock::TimePoint last_discovery_{};                           // guarded by mu_
  // key "group/version/resource/namespace" -> the informer ("" namespace: cluster-wide).
  std::map<std::string, std::shared_ptr<Informer>, std::less<>> informers_;  // guarded by mu_
  std::set<std::string, std::less<>> pending_;                               // guarded by mu_
  std::deque<StartRequest> queue_;                                           // guarded by mu_
  // "group/version/resource" whose cluster-wide list is forbidden.
  std::set<std::string, std::less<>> forbidden_;  // guarded by mu_
  // "group/version/resource" stopped for idleness and not read since.
  std::set<std::string, std::less<>> idle_stopped_;  // guarded by mu_
  // "group/version/resource" the upstream does not serve in protobuf (406).
  std::set<std::string, std::less<>> no_protobuf_;  // guarded by mu_
  // Namespace informer keys the upstream refused: when they may be tried again, and the
  // backoff of the next refusal.
  struct Refusal {
    cache::Clock::TimePoint retry_at;
    std::chrono::milliseconds backoff;
  };
  std::map<std::string, Refusal, std::less<>> refused_;  // guarded by mu_
  // Informer keys readiness waits for; settled ones (synced or given up) are removed.
  std::set<std::string> awaited_;  // guarded by mu_
  bool configured_started_ = false;  // guarded by mu_
  bool stopped_ = false;             // guarded by mu_
  cache::ChangeSignal informers_changed_;  // notified after informers start or stop (outside mu_)

  std::atomic<uint64_t> rounds_{0};
  std::jthread thread_;
};

}  // namespace watch
