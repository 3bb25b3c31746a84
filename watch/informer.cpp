#include "watch/informer.h"

#include <utility>

#include "cache/object_meta_parser.h"
#include "cache/protobuf/protobuf_object_parser.h"

namespace watch {

// Notes 403 answers on the way through, so the manager can tell "not allowed to list
// this collection" (fall back to namespaces) from an outage (the reflector retries); and
// 406 to a LIST, so it can tell "not served in this encoding" (a protobuf informer of a
// type the upstream writes only in JSON) from a passing failure.
class Informer::ObservedListerWatcher final : public ListerWatcher {
 public:
  ObservedListerWatcher(std::unique_ptr<ListerWatcher> upstream, std::atomic<bool>& forbidden,
                        std::atomic<bool>& not_acceptable)
      : upstream_(std::move(upstream)), forbidden_(forbidden), not_acceptable_(not_acceptable) {}

  // watch::ListerWatcher
  ListResponse list(const ListOptions& opts, std::stop_token stop) override {
    ListResponse response = upstream_->list(opts, stop);
    if (response.status == 403) forbidden_.store(true, std::memory_order_release);
    if (response.status == 406) not_acceptable_.store(true, std::memory_order_release);
    return response;
  }
  WatchResult watch(const ListOptions& opts, const LineCallback& on_line, std::stop_token stop) override {
    WatchResult result = upstream_->watch(opts, on_line, stop);
    if (result.end == WatchEnd::HttpError && result.status == 403) forbidden_.store(true, std::memory_order_release);
    return result;
  }

 private:
  std::unique_ptr<ListerWatcher> upstream_;
  std::atomic<bool>& forbidden_;
  std::atomic<bool>& not_acceptable_;
};

cache::StoreOptions Informer::storeOptions(const InformerOptions& options) {
  cache::StoreOptions out;
  out.history = options.history;
  // Every selectable field gets an index: per-node agents list and watch pods by
  // spec.nodeName, and a field selector on an indexed field reads one bucket.
  if (options.resource.field_spec) {
    for (const auto& field : options.resource.field_spec->fields) out.indexes.push_back(cache::indexes::byField(field.name));
  }
  if (options.encoding == cache::Encoding::Protobuf) return out;  // JSON paths: not read from protobuf
  for (const auto& path : options.index_paths) out.indexes.push_back(cache::indexes::byIndexPath(path.name));
  return out;
}

std::unique_ptr<cache::ObjectParser> Informer::makeParser(const InformerOptions& options) {
  if (options.encoding == cache::Encoding::Protobuf) {
    cache::ProtobufParserOptions out;
    out.field_spec = options.resource.field_spec;
    out.strip_managed_fields = options.strip_managed_fields;
    return std::make_unique<cache::ProtobufObjectParser>(std::move(out));
  }
  cache::ParserOptions out;
  out.field_spec = options.resource.field_spec;
  out.index_paths = options.index_paths;
  out.strip_managed_fields = options.strip_managed_fields;
  out.kind = options.resource.kind;
  out.api_version = options.resource.apiVersion();
  return std::make_unique<cache::ObjectMetaParser>(std::move(out));
}

Informer::Informer(InformerOptions options, std::unique_ptr<ListerWatcher> lister_watcher, cache::Clock& clock,
                   RelistLimiter& relist_limiter)
    : options_(std::move(options)),
      name_((options_.namespace_scope.empty() ? options_.resource.displayName()
                                              : options_.resource.displayName() + " in namespace " +
                                                    options_.namespace_scope) +
            (options_.encoding == cache::Encoding::Protobuf ? " (protobuf)" : "")),
      clock_(clock),
      last_used_(clock.now().time_since_epoch().count()),
      store_(storeOptions(options_), clock_),
      parser_(makeParser(options_)),
      dispatcher_(store_, clock_, FrameEncoder(options_.resource, options_.encoding)),
      freshness_(clock_),
      probes_(clock_),
      adapter_(store_, *parser_, &dispatcher_),
      lister_watcher_(std::make_unique<ObservedListerWatcher>(std::move(lister_watcher), forbidden_, not_acceptable_)) {
  ReflectorOptions reflector = options_.reflector;
  reflector.name = name_;
  reflector.encoding = options_.encoding;
  reflector.limit_first_sync = !options_.on_demand;
  if (!options_.state_dir.empty()) {
    state_ = std::make_unique<ResourceState>(
        options_.state_dir, options_.state_file, stateIdentity(options_.resource, options_.namespace_scope, options_.strip_managed_fields,
                                         options_.encoding),
        name_, options_.reflector.log, clock_);
    reflector.warm_start = [state = state_.get()](ReflectorStore& store) { return state->load(store); };
  }
  reflector_ = std::make_unique<Reflector>(std::move(reflector), *lister_watcher_, adapter_, clock_, relist_limiter);
}

Informer::~Informer() { stop(); }

void Informer::start() { reflector_->start(); }

void Informer::stop() { reflector_->stop(); }

bool Informer::saveState() { return state_ && state_->save(store_); }

void Informer::markUsed() { last_used_.store(clock_.now().time_since_epoch().count(), std::memory_order_relaxed); }

cache::Clock::TimePoint Informer::lastUsed() const {
  return cache::Clock::TimePoint(cache::Clock::Duration(last_used_.load(std::memory_order_relaxed)));
}

}  // namespace watch
