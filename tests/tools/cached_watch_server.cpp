// cached-watch-server: the proxy's server with a fixed set of cached resources, each a
// Reflector (HttpListerWatcher -> StoreAdapter -> ThreadSafeStore -> WatchDispatcher) as
// the informer manager wires them. Integration tests and benchmarks use it to exercise
// WATCH fan-out without depending on discovery.
//
//   cached-watch-server --upstream http://127.0.0.1:PORT [--cache pods,configmaps]
//                       [--bookmark-interval-ms N] [--queue-capacity N] [--io-threads N]
//
// Prints "listening on HOST:PORT" once every resource has synced. Ends on SIGTERM/SIGINT
// (stopping the server first, which ends open watches with their terminating chunk).
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/object_meta_parser.h"
#include "cache/selectable_fields.h"
#include "cache/thread_safe_store.h"
#include "proxy/proxy_server.h"
#include "proxy/upstream/http_lister_watcher.h"
#include "watch/cached_resource.h"
#include "watch/clock.h"
#include "watch/informer_registry.h"
#include "watch/reflector.h"
#include "watch/relist_limiter.h"
#include "watch/store_adapter.h"
#include "watch/watch_dispatcher.h"

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "cached-watch-server: " << why << "\n";
  std::exit(2);
}

proxy::UpstreamOptions parseUpstream(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  if (url.rfind(scheme, 0) != 0) usage("--upstream must start with http://");
  std::string rest = url.substr(scheme.size());
  proxy::UpstreamOptions upstream;
  upstream.scheme = "http";
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) usage("--upstream needs an explicit port");
  upstream.host = rest.substr(0, colon);
  upstream.port = static_cast<uint16_t>(std::stoul(rest.substr(colon + 1)));
  return upstream;
}

struct Known {
  const char* kind;
  const char* path;
};
const std::map<std::string, Known> kKnown = {
    {"pods", {"Pod", "/api/v1/pods"}},
    {"configmaps", {"ConfigMap", "/api/v1/configmaps"}},
    {"secrets", {"Secret", "/api/v1/secrets"}},
    {"services", {"Service", "/api/v1/services"}},
};

// One cached core/v1 resource, wired like the informer manager wires one.
class StaticInformer final : public watch::CachedResource {
 public:
  StaticInformer(const std::string& resource, const proxy::UpstreamOptions& upstream)
      : resource_(makeResource(resource)),
        parser_(parserOptions(resource_)),
        store_(storeOptions(), cache::RealClock::instance()),
        dispatcher_(store_),
        adapter_(store_, parser_, &dispatcher_),
        lister_watcher_(upstream, kKnown.at(resource).path) {
    watch::ReflectorOptions options;
    options.name = resource;
    options.log = [](watch::LogLevel, std::string_view message) {
      std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
    };
    reflector_ = std::make_unique<watch::Reflector>(std::move(options), lister_watcher_, adapter_, clock_, limiter_);
  }
  ~StaticInformer() override { reflector_->stop(); }

  void start() { reflector_->start(); }

  // watch::CachedResource
  const watch::ApiResource& resource() const override { return resource_; }
  const std::string& namespaceScope() const override { return scope_; }
  const cache::ThreadSafeStore& store() const override { return store_; }
  bool hasSynced() const override { return store_.hasSynced(); }
  watch::WatchDispatcher& dispatcher() override { return dispatcher_; }
  void markUsed() override {}

 private:
  static watch::ApiResource makeResource(const std::string& resource) {
    watch::ApiResource r;
    r.version = "v1";
    r.resource = resource;
    r.kind = kKnown.at(resource).kind;
    r.list_kind = r.kind + "List";
    r.field_spec = cache::FieldSpec::forBuiltin("", "v1", resource, true);
    return r;
  }
  static cache::ParserOptions parserOptions(const watch::ApiResource& r) {
    cache::ParserOptions o;
    o.field_spec = r.field_spec;
    o.kind = r.kind;
    o.api_version = "v1";
    return o;
  }
  static cache::StoreOptions storeOptions() {
    cache::StoreOptions o;
    o.indexes.push_back(cache::indexes::byField("spec.nodeName"));
    return o;
  }

  watch::ApiResource resource_;
  std::string scope_;
  cache::ObjectMetaParser parser_;
  cache::ThreadSafeStore store_;
  watch::WatchDispatcher dispatcher_;
  watch::StoreAdapter adapter_;
  proxy::upstream::HttpListerWatcher lister_watcher_;
  watch::RealClock clock_;
  watch::UnlimitedRelistLimiter limiter_;
  std::unique_ptr<watch::Reflector> reflector_;
};

class StaticRegistry final : public watch::InformerRegistry {
 public:
  std::map<std::string, std::shared_ptr<StaticInformer>> informers;

  // watch::InformerRegistry
  std::shared_ptr<watch::CachedResource> find(std::string_view group, std::string_view version,
                                              std::string_view resource, std::string_view) override {
    if (!group.empty() || version != "v1") return nullptr;
    auto it = informers.find(std::string(resource));
    return it == informers.end() ? nullptr : it->second;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string upstream_url;
  std::string cache_list = "pods,configmaps";
  proxy::ServerOptions server_options;
  server_options.listen_host = "127.0.0.1";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value for " + flag);
    const std::string value = argv[++i];
    if (flag == "--upstream") upstream_url = value;
    else if (flag == "--cache") cache_list = value;
    else if (flag == "--bookmark-interval-ms") server_options.watch_bookmark_interval = std::chrono::milliseconds(std::stoll(value));
    else if (flag == "--queue-capacity") server_options.watch_queue_capacity = std::stoul(value);
    else if (flag == "--io-threads") server_options.io_threads = std::stoi(value);
    else usage("unknown flag " + flag);
  }
  if (upstream_url.empty()) usage("--upstream is required");

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const proxy::UpstreamOptions upstream = parseUpstream(upstream_url);
  auto registry = std::make_shared<StaticRegistry>();
  std::stringstream names(cache_list);
  for (std::string name; std::getline(names, name, ',');) {
    if (!kKnown.contains(name)) usage("cannot cache " + name);
    registry->informers[name] = std::make_shared<StaticInformer>(name, upstream);
    registry->informers[name]->start();
  }
  for (auto& [name, informer] : registry->informers) {
    while (!informer->hasSynced()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  proxy::ProxyServer server(server_options, upstream);
  server.setInformerRegistry(registry);
  server.start();
  std::printf("listening on %s:%u\n", server.listenHost().c_str(), server.listenPort());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  server.stop();
  return 0;
}
