// cached-proxy: kube-cache-proxy's server with a static informer registry: one Reflector
// per listed resource of the bundled test apiserver, wired as the proxy wires them
// (HttpListerWatcher -> StoreAdapter -> ThreadSafeStore). Lets the cached read path be
// tested end to end independently of the informer manager's discovery.
//
//   cached-proxy --upstream http://127.0.0.1:PORT [--cache pods,configmaps,...]
//
// Prints "listening on HOST:PORT" once serving. Ends on SIGTERM/SIGINT.

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cache/object_meta_parser.h"
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

// The test apiserver's resources this tool knows (its --sample-data set).
watch::ApiResource describe(std::string_view name) {
  watch::ApiResource r;
  auto set = [&r](std::string group, std::string kind, std::string resource, bool namespaced, bool custom) {
    r.group = std::move(group);
    r.version = "v1";
    r.kind = std::move(kind);
    r.list_kind = r.kind + "List";
    r.resource = std::move(resource);
    r.namespaced = namespaced;
    r.custom = custom;
  };
  if (name == "pods") set("", "Pod", "pods", true, false);
  else if (name == "configmaps") set("", "ConfigMap", "configmaps", true, false);
  else if (name == "namespaces") set("", "Namespace", "namespaces", false, false);
  else if (name == "deployments.apps") set("apps", "Deployment", "deployments", true, false);
  else if (name == "widgets.example.com") set("example.com", "Widget", "widgets", true, true);
  else throw std::runtime_error("unknown resource " + std::string(name));
  r.field_spec = r.custom ? cache::FieldSpec::forCustomResource(r.namespaced, {})
                          : cache::FieldSpec::forBuiltin(r.group, r.version, r.resource, r.namespaced);
  return r;
}

class StaticInformer final : public watch::CachedResource {
 public:
  StaticInformer(watch::ApiResource resource, const proxy::UpstreamOptions& upstream)
      : resource_(std::move(resource)),
        parser_(cache::ParserOptions{.field_spec = resource_.field_spec,
                                     .kind = resource_.kind,
                                     .api_version = resource_.apiVersion()}),
        store_(cache::StoreOptions{}, cache::RealClock::instance()),
        adapter_(store_, parser_),
        dispatcher_(store_),
        lister_watcher_(upstream, (resource_.group.empty() ? "/api/v1/" : "/apis/" + resource_.apiVersion() + "/") +
                                      resource_.resource),
        reflector_(watch::ReflectorOptions{.name = resource_.displayName()}, lister_watcher_, adapter_, clock_,
                   relist_limiter_) {
    reflector_.start();
  }
  ~StaticInformer() override { reflector_.stop(); }

  // watch::CachedResource
  const watch::ApiResource& resource() const override { return resource_; }
  const std::string& namespaceScope() const override { return scope_; }
  const cache::ThreadSafeStore& store() const override { return store_; }
  bool hasSynced() const override { return reflector_.hasSynced(); }
  watch::WatchDispatcher& dispatcher() override { return dispatcher_; }
  void markUsed() override {}

 private:
  watch::ApiResource resource_;
  std::string scope_;
  cache::ObjectMetaParser parser_;
  cache::ThreadSafeStore store_;
  watch::StoreAdapter adapter_;
  watch::WatchDispatcher dispatcher_;
  proxy::upstream::HttpListerWatcher lister_watcher_;
  watch::RealClock clock_;
  watch::UnlimitedRelistLimiter relist_limiter_;
  watch::Reflector reflector_;
};

class StaticRegistry final : public watch::InformerRegistry {
 public:
  std::vector<std::shared_ptr<StaticInformer>> informers;

  // watch::InformerRegistry
  std::shared_ptr<watch::CachedResource> find(std::string_view group, std::string_view version,
                                              std::string_view resource, std::string_view) override {
    for (const auto& informer : informers) {
      const watch::ApiResource& r = informer->resource();
      if (r.group == group && r.version == version && r.resource == resource) return informer;
    }
    return nullptr;
  }
};

proxy::UpstreamOptions parseUpstream(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  if (url.rfind(scheme, 0) != 0) throw std::runtime_error("--upstream must start with http://");
  const std::string rest = url.substr(scheme.size());
  const size_t colon = rest.rfind(':');
  proxy::UpstreamOptions upstream;
  upstream.scheme = "http";
  upstream.host = rest.substr(0, colon);
  upstream.port = static_cast<uint16_t>(std::stoul(rest.substr(colon + 1)));
  return upstream;
}

}  // namespace

int main(int argc, char** argv) {
  std::string upstream_url, cached = "pods,configmaps,widgets.example.com";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--upstream") upstream_url = argv[i + 1];
    else if (flag == "--cache") cached = argv[i + 1];
  }
  if (upstream_url.empty()) {
    std::cerr << "usage: cached-proxy --upstream http://HOST:PORT [--cache pods,...]\n";
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const proxy::UpstreamOptions upstream = parseUpstream(upstream_url);
  auto registry = std::make_shared<StaticRegistry>();
  std::stringstream names(cached);
  for (std::string name; std::getline(names, name, ',');) {
    registry->informers.push_back(std::make_shared<StaticInformer>(describe(name), upstream));
  }
  proxy::ProxyServer server(proxy::ServerOptions{}, upstream);
  server.setInformerRegistry(registry);
  server.start();
  std::printf("listening on %s:%u\n", server.listenHost().c_str(), server.listenPort());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  server.stop();
  registry->informers.clear();
  return 0;
}
