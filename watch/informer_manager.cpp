#include "watch/informer_manager.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "cache/selectors/name_validation.h"

namespace watch {
namespace {

std::string gvrKey(std::string_view group, std::string_view version, std::string_view resource) {
  std::string key(group);
  key += '/';
  key += version;
  key += '/';
  key += resource;
  return key;
}

std::string informerKey(const ApiResource& resource, std::string_view namespace_name,
                        cache::Encoding encoding = cache::Encoding::Json) {
  std::string key = gvrKey(resource.group, resource.version, resource.resource);
  key += '/';
  key += namespace_name;
  if (encoding == cache::Encoding::Protobuf) key += "#protobuf";
  return key;
}

bool hasVerb(const ApiResource& resource, std::string_view verb) {
  return std::find(resource.verbs.begin(), resource.verbs.end(), verb) != resource.verbs.end();
}

}  // namespace

InformerManager::InformerManager(InformerManagerOptions options, Discovery& discovery, ListerWatcherFactory factory,
                                 cache::Clock& clock, RelistLimiter& relist_limiter)
    : options_(std::move(options)),
      discovery_(discovery),
      factory_(std::move(factory)),
      clock_(clock),
      relist_limiter_(relist_limiter) {}

InformerManager::~InformerManager() { stop(); }

void InformerManager::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void InformerManager::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  std::map<std::string, std::shared_ptr<Informer>, std::less<>> informers;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    informers.swap(informers_);
    pending_.clear();
    queue_.clear();
  }
  for (auto& [key, informer] : informers) informer->stop();
}

std::shared_ptr<CachedResource> InformerManager::find(std::string_view group, std::string_view version,
                                                      std::string_view resource, std::string_view namespace_name,
                                                      cache::Encoding encoding) {
  std::lock_guard lock(mu_);
  return findLocked(group, version, resource, namespace_name, true, encoding);
}

std::shared_ptr<CachedResource> InformerManager::findRunning(std::string_view group, std::string_view version,
                                                             std::string_view resource, std::string_view namespace_name,
                                                             cache::Encoding encoding) {
  std::lock_guard lock(mu_);
  return findLocked(group, version, resource, namespace_name, false, encoding);
}

bool InformerManager::known(std::string_view group, std::string_view version, std::string_view resource) const {
  std::lock_guard lock(mu_);
  return discovered_.find(gvrKey(group, version, resource)) != discovered_.end();
}

bool InformerManager::cacheableInProtobuf(std::string_view group, std::string_view version, std::string_view resource) {
  std::lock_guard lock(mu_);
  if (stopped_ || deniedLocked(group, resource)) return false;
  auto it = discovered_.find(gvrKey(group, version, resource));
  return it != discovered_.end() && !it->second.custom && cacheableLocked(it->second) &&
         no_protobuf_.count(it->first) == 0;
}

bool InformerManager::starting(std::string_view group, std::string_view version, std::string_view resource,
                               std::string_view namespace_name, cache::Encoding encoding) {
  std::lock_guard lock(mu_);
  auto it = discovered_.find(gvrKey(group, version, resource));
  if (stopped_ || it == discovered_.end()) return false;
  const ApiResource& api_resource = it->second;
  for (std::string_view scope : {std::string_view{}, api_resource.namespaced ? namespace_name : std::string_view{}}) {
    const std::string key = informerKey(api_resource, scope, encoding);
    if (pending_.count(key) > 0) return true;
    if (auto informer = informers_.find(key); informer != informers_.end() && !informer->second->hasSynced()) {
      return true;
    }
  }
  return false;
}

std::shared_ptr<CachedResource> InformerManager::findLocked(std::string_view group, std::string_view version,
                                                            std::string_view resource, std::string_view namespace_name,
                                                            bool start, cache::Encoding encoding) {
  // Every namespace is a DNS-1123 label: any other name (CR LF decoded from a path, issue
  // 36, finding 4) gets no informer and no cache's answer or probe; it passes through.
  const bool namespace_name_ok = namespace_name.empty() || cache::isDNS1123Label(namespace_name);
  if (stopped_ || !namespace_name_ok || deniedLocked(group, resource)) return nullptr;
  const std::string gvr = gvrKey(group, version, resource);
  auto discovered = discovered_.find(gvr);
  if (discovered == discovered_.end()) {
    // Perhaps a CRD created after the last discovery: look again, but not on every miss.
    if (start && discovered_once_ && !rediscover_ && clock_.now() - last_discovery_ >= options_.rediscovery_interval) {
      rediscover_ = true;
      wake_.notify_all();
    }
    return nullptr;
  }
  const ApiResource& api_resource = discovered->second;
  if (!cacheableLocked(api_resource)) return nullptr;
  if (encoding == cache::Encoding::Protobuf && (api_resource.custom || no_protobuf_.count(gvr) > 0)) return nullptr;
  const std::string namespace_scope = api_resource.namespaced ? std::string(namespace_name) : "";

  // The whole collection answers every scope; a namespace's informer only its own.
  if (auto it = informers_.find(informerKey(api_resource, "", encoding)); it != informers_.end()) {
    it->second->markUsed();
    return it->second;
  }
  if (!namespace_scope.empty()) {
    if (auto it = informers_.find(informerKey(api_resource, namespace_scope, encoding)); it != informers_.end()) {
      it->second->markUsed();
      return it->second;
    }
  }
  if (!start || !options_.on_demand) return nullptr;
  const ConfiguredResource* configured = configuredFor(group, resource);
  const bool cluster_wide = forbidden_.count(gvr) == 0 && (configured == nullptr || configured->namespaces.empty());
  if (cluster_wide) {
    enqueueLocked(api_resource, "", true, encoding);
  } else if (!namespace_scope.empty()) {
    const std::string key = informerKey(api_resource, namespace_scope, encoding);
    if (auto refusal = refused_.find(key); refusal != refused_.end() && clock_.now() < refusal->second.retry_at) {
      return nullptr;
    }
    const auto namespace_informers =
        std::count_if(informers_.begin(), informers_.end(),
                      [](const auto& entry) { return !entry.second->namespaceScope().empty(); }) +
        static_cast<std::ptrdiff_t>(pending_.size());
    if (static_cast<size_t>(namespace_informers) >= options_.max_namespace_informers) return nullptr;
    enqueueLocked(api_resource, namespace_scope, true, encoding);
  }
  return nullptr;
}

bool InformerManager::ready() const {
  // With nothing configured there is nothing to wait for, not even discovery.
  if (std::none_of(options_.configured.begin(), options_.configured.end(),
                   [](const ConfiguredResource& c) { return c.start; })) {
    return true;
  }
  std::lock_guard lock(mu_);
  if (!discovered_once_ || !configured_started_) return false;
  for (const std::string& key : awaited_) {
    auto it = informers_.find(key);
    if (it == informers_.end()) {
      if (pending_.count(key) > 0) return false;
      continue;
    }
    if (!it->second->caughtUp()) return false;  // a warm start serves before it has caught up
  }
  return true;
}

std::vector<std::shared_ptr<Informer>> InformerManager::informers() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<Informer>> out;
  out.reserve(informers_.size());
  for (const auto& [key, informer] : informers_) out.push_back(informer);
  return out;
}

std::vector<NotCachedResource> InformerManager::notCached() const {
  std::lock_guard lock(mu_);
  std::set<std::string, std::less<>> cached;  // "group/resource" with a cluster-wide informer
  for (const auto& [key, informer] : informers_) {
    if (informer->namespaceScope().empty()) cached.insert(informer->resource().group + "/" + informer->resource().resource);
  }
  std::set<std::string, std::less<>> seen;
  std::vector<NotCachedResource> out;
  for (const ApiResource& r : discovered_order_) {  // preferred versions first
    const std::string group_resource = r.group + "/" + r.resource;
    if (r.resource.find('/') != std::string::npos || !seen.insert(group_resource).second) continue;
    if (cached.count(group_resource) > 0) continue;
    const std::string gvr = gvrKey(r.group, r.version, r.resource);
    std::string reason;
    if (deniedLocked(r.group, r.resource)) {
      reason = "on the deny list (--no-cache)";
    } else if (!cacheableLocked(r)) {
      reason = "the upstream does not offer list and watch for it";
    } else if (forbidden_.count(gvr) > 0) {
      reason = "list forbidden cluster-wide for the proxy's identity: cached per namespace on demand "
               "(grant list and watch to cache it whole)";
    } else if (pending_.count(informerKey(r, "")) > 0) {
      reason = "starting";
    } else if (idle_stopped_.count(gvr) > 0) {
      reason = "idle: stopped after --cache-idle-timeout; cached again on its next read";
    } else if (!options_.on_demand) {
      reason = "not in --cache (on-demand caching is off)";
    } else {
      reason = "not read yet: cached on its first read";
    }
    out.push_back({r.group, r.version, r.resource, std::move(reason)});
  }
  return out;
}

void InformerManager::run(std::stop_token stop) {
  // While discovery has never answered, retry quickly and back off up to the
  // rediscovery interval: the upstream may simply be starting too.
  auto retry_delay = options_.housekeeping_interval;
  auto next_discovery = clock_.now();
  while (!stop.stop_requested()) {
    std::vector<StartRequest> starts;
    std::vector<std::shared_ptr<Informer>> stops;
    {
      std::unique_lock lock(mu_);
      const bool due = !discovered_once_ && clock_.now() >= next_discovery;
      if (due || rediscover_) {
        discoverLocked(lock, stop);
        if (!discovered_once_) {
          next_discovery = clock_.now() + retry_delay;
          retry_delay = std::min<std::chrono::milliseconds>(retry_delay * 2, options_.rediscovery_interval);
        }
      }
      if (discovered_once_ && !configured_started_) startConfiguredLocked();
      while (!queue_.empty()) {
        starts.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      stops = collectStoppableLocked();
    }
    for (auto& request : starts) {
      if (stop.stop_requested()) break;
      startInformer(std::move(request), stop);
    }
    // Stopping joins the reflector thread; the last reference then frees the store.
    for (auto& informer : stops) informer->stop();
    // Requests waiting for a cache to start (--cache-start-wait) look again: one started,
    // or failed, or stopped. A start's sync is its store's own signal.
    if (!starts.empty() || !stops.empty()) informers_changed_.notify();
    stops.clear();
    rounds_.fetch_add(1, std::memory_order_release);

    std::unique_lock lock(mu_);
    wake_.wait_for(lock, stop, options_.housekeeping_interval, [this] { return !queue_.empty() || rediscover_; });
  }
}

void InformerManager::discoverLocked(std::unique_lock<std::mutex>& lock, std::stop_token stop) {
  rediscover_ = false;
  lock.unlock();
  DiscoveryResult result;
  try {
    result = discovery_.discover(stop);
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  lock.lock();
  last_discovery_ = clock_.now();
  if (stop.stop_requested()) return;
  if (!result.ok()) {
    log(LogLevel::Warning, "discovery failed: " + result.error);
    return;
  }
  std::map<std::string, ApiResource, std::less<>> discovered;
  for (ApiResource& resource : result.resources) {
    // The first version listed for a group resource is the preferred one; keep it first.
    discovered.emplace(gvrKey(resource.group, resource.version, resource.resource), resource);
  }
  discovered_order_ = std::move(result.resources);
  discovered_.swap(discovered);
  if (!discovered_once_) log(LogLevel::Info, "discovery: " + std::to_string(discovered_.size()) + " resources");
  discovered_once_ = true;
}

void InformerManager::startConfiguredLocked() {
  configured_started_ = true;
  for (const ConfiguredResource& configured : options_.configured) {
    if (!configured.start) continue;
    const std::string name = configured.group.empty() ? configured.resource : configured.resource + "." + configured.group;
    if (deniedLocked(configured.group, configured.resource)) {
      log(LogLevel::Warning, name + " is denied caching; not cached");
      continue;
    }
    auto preferred = std::find_if(discovered_order_.begin(), discovered_order_.end(), [&](const ApiResource& r) {
      return r.group == configured.group && r.resource == configured.resource;
    });
    if (preferred == discovered_order_.end()) {
      log(LogLevel::Error, name + " is not served by the upstream; not cached");
      continue;
    }
    if (!cacheableLocked(*preferred)) {
      log(LogLevel::Error, name + " does not support list and watch; not cached");
      continue;
    }
    std::vector<std::string> namespaces = configured.namespaces;
    if (namespaces.empty() || !preferred->namespaced) namespaces = {""};
    for (const std::string& namespace_name : namespaces) {
      awaited_.insert(informerKey(*preferred, namespace_name));
      enqueueLocked(*preferred, namespace_name, false);
    }
  }
}

void InformerManager::startInformer(StartRequest request, std::stop_token stop) {
  const std::string key = informerKey(request.resource, request.namespace_name, request.encoding);
  InformerOptions options;
  options.encoding = request.encoding;
  options.resource = std::move(request.resource);
  options.namespace_scope = std::move(request.namespace_name);
  options.on_demand = request.on_demand;
  options.history = options_.history;
  options.reflector = options_.reflector;
  options.state_dir = options_.state_dir;
  options.state_file = options_.state_file;
  ApiResource& resource = options.resource;
  if (const ConfiguredResource* configured = configuredFor(resource.group, resource.resource)) {
    options.strip_managed_fields = configured->strip_managed_fields;
    options.index_paths = configured->index_paths;
  }

  std::shared_ptr<Informer> informer;
  try {
    if (resource.custom) {
      // S6: a custom resource's field selectors are its CRD's selectableFields; if the
      // CRD cannot be read, only metadata.name/namespace (the apiserver's minimum).
      auto fields = discovery_.customResourceFields(resource, stop);
      if (!fields) log(LogLevel::Warning, resource.displayName() + ": CRD unreadable, field selectors limited to metadata");
      if (fields && !fields->list_kind.empty()) resource.list_kind = fields->list_kind;
      resource.field_spec = cache::FieldSpec::forCustomResource(resource.namespaced,
                                                                fields ? fields->json_paths : std::vector<std::string>{});
    } else {
      resource.field_spec = cache::FieldSpec::forBuiltin(resource.group, resource.version, resource.resource,
                                                         resource.namespaced);
    }
    auto lister_watcher = factory_(resource, options.namespace_scope);
    informer = std::make_shared<Informer>(std::move(options), std::move(lister_watcher), clock_, relist_limiter_);
    informer->start();
  } catch (const std::exception& e) {
    log(LogLevel::Error, "cannot cache " + key + ": " + e.what());
    std::lock_guard lock(mu_);
    pending_.erase(key);
    awaited_.erase(key);
    return;
  }
  log(LogLevel::Info, "caching " + informer->name() + (informer->onDemand() ? " (on demand)" : ""));
  std::unique_lock lock(mu_);
  pending_.erase(key);
  if (stopped_) {
    lock.unlock();
    informer->stop();
    return;
  }
  idle_stopped_.erase(gvrKey(informer->resource().group, informer->resource().version, informer->resource().resource));
  informers_[key] = std::move(informer);
}

std::vector<std::shared_ptr<Informer>> InformerManager::collectStoppableLocked() {
  std::vector<std::shared_ptr<Informer>> out;
  const auto now = clock_.now();
  for (auto it = informers_.begin(); it != informers_.end();) {
    Informer& informer = *it->second;
    if (informer.notAcceptable() && informer.encoding() == cache::Encoding::Protobuf) {
      const ApiResource& resource = informer.resource();
      no_protobuf_.insert(gvrKey(resource.group, resource.version, resource.resource));
      log(LogLevel::Warning, informer.name() + ": the upstream answers 406 Not Acceptable; not cached in " +
                                 std::string(cache::encodingName(informer.encoding())));
    } else if (informer.forbidden()) {
      const ApiResource& resource = informer.resource();
      if (informer.namespaceScope().empty()) {
        forbidden_.insert(gvrKey(resource.group, resource.version, resource.resource));
        log(LogLevel::Warning, informer.name() + ": list forbidden cluster-wide; caching per namespace on demand "
                                   "instead (grant the proxy's identity list and watch on it to cache it whole)");
      } else {
        // Remembered with a growing backoff: a request naming this namespace again passes
        // through instead of starting (and failing) another informer.
        auto [refusal, first] = refused_.try_emplace(it->first, Refusal{now, options_.refusal_backoff});
        if (!first) refusal->second.backoff = std::min(refusal->second.backoff * 2, options_.max_refusal_backoff);
        refusal->second.retry_at = now + refusal->second.backoff;
        if (refused_.size() > 4 * options_.max_namespace_informers + 1024) refused_.clear();  // bounded too
        log(LogLevel::Warning, informer.name() + ": list forbidden; not cached, not retried for " +
                                   std::to_string(refusal->second.backoff.count() / 1000) + " s");
      }
      awaited_.erase(it->first);
    } else if (!(informer.onDemand() && now - informer.lastUsed() >= options_.idle_timeout &&
                 it->second.use_count() == 1)) {
      ++it;
      continue;
    } else {
      log(LogLevel::Info, informer.name() + ": idle, no longer cached");
      const ApiResource& resource = informer.resource();
      idle_stopped_.insert(gvrKey(resource.group, resource.version, resource.resource));
    }
    out.push_back(std::move(it->second));
    it = informers_.erase(it);
  }
  return out;
}

bool InformerManager::deniedLocked(std::string_view group, std::string_view resource) const {
  return std::any_of(options_.deny.begin(), options_.deny.end(),
                     [&](const GroupResourceName& d) { return d.group == group && d.resource == resource; });
}

const ConfiguredResource* InformerManager::configuredFor(std::string_view group, std::string_view resource) const {
  for (const ConfiguredResource& configured : options_.configured) {
    if (configured.group == group && configured.resource == resource) return &configured;
  }
  return nullptr;
}

bool InformerManager::cacheableLocked(const ApiResource& resource) const {
  return resource.resource.find('/') == std::string::npos && hasVerb(resource, "list") && hasVerb(resource, "watch");
}

void InformerManager::enqueueLocked(const ApiResource& resource, std::string namespace_name, bool on_demand,
                                    cache::Encoding encoding) {
  const std::string key = informerKey(resource, namespace_name, encoding);
  if (pending_.count(key) > 0 || informers_.count(key) > 0) return;
  pending_.insert(key);
  queue_.push_back({resource, std::move(namespace_name), on_demand, encoding});
  wake_.notify_all();
}

void InformerManager::log(LogLevel level, const std::string& message) const {
  if (options_.log) options_.log(level, message);
}

}  // namespace watch
