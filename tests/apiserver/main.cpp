// kube-test-apiserver: a standalone stand-in for kube-apiserver (1.34+, watch cache
// on) for the resources of its catalog. See --help.
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "tests/apiserver/features/feature_gates.h"
#include "tests/apiserver/handlers/api_server.h"
#include "tests/apiserver/http/http_server.h"

namespace {

constexpr const char* kHelp = R"(kube-test-apiserver: behaves like kube-apiserver (1.34+, watch cache on) for the
resources of its catalog, for tests, benchmarks and demos.

Usage: kube-test-apiserver [flags]

  --listen ADDR:PORT         address to serve on (default 127.0.0.1:0; port 0 picks a free
                             port). Prints "listening on ADDR:PORT" once accepting.
  --tls-cert-file FILE       serve HTTPS with this certificate chain (PEM)
  --tls-private-key-file F   private key for --tls-cert-file (PEM)
  --client-ca-file FILE      require client certificates signed by this CA
  --token TOKEN              require "Authorization: Bearer TOKEN" (401 otherwise)
  --feature-gates SPEC       Name=true,... as kube-apiserver's; known: ShardedListAndWatch
                             (off by default: shardSelector is then ignored)
  --authn                    authenticate and authorize every API request (except /control/,
                             /healthz, /livez, /readyz) as the apiserver does: bearer tokens of
                             fixed test identities, fixed RBAC-like rules, impersonation headers;
                             401/403 Status otherwise. The identities and rules are listed below.
  --resources FILE           resource catalog YAML (default: resources.yaml next to the
                             source if present, else the copy compiled into the binary)
  --bookmark-interval SECS   watch bookmark period (default 60)
  --history-size N           watch events retained for resumption and Exact reads
                             (default 10000); older RVs answer 410 Expired
  --sample-data              create demo namespaces, pods, configmaps, deployments, widgets
  --enable-control           serve the /control/ endpoints below (404 otherwise)
  --help                     this text

Test identities (bearer token -> user [groups]; all also in system:authenticated):
  admin-token   admin [system:masters]                  everything
  proxy-token   system:serviceaccount:kube-system:kube-cache-proxy
                                                        everything (incl. reviews, impersonate)
  alice-token   alice [team-a], uid uid-alice, extra scopes=namespace-a
                                                        get/list/watch pods in namespace "a"
  bob-token     bob [cluster-readers]                   get/list/watch pods, namespaces everywhere
  nobody-token  nobody                                  nothing
  node-1-token  system:node:node-1 [system:nodes]       list/watch pods with fieldSelector
                                                        spec.nodeName=node-1 (Node authorizer)
  Every authenticated user may GET non-resource paths except /metrics.
  POST /apis/authentication.k8s.io/v1/tokenreviews and
  POST /apis/authorization.k8s.io/v1/subjectaccessreviews answer for these identities and
  rules (also without --authn); /control/counters counts them.

Control endpoints (with --enable-control; any method, answers JSON):
  GET  /control/counters              requests per verb+resource, open watch streams per
                                      resource, total lists and watches, current RV, the
                                      compacted RV, the oldest RV a watch resumes from, and
                                      the last 100 watches (resource, RV, sendInitialEvents)
  POST /control/compact               drop the event history now (older RVs get 410: watches,
                                      Exact LISTs and continue tokens alike; a real etcd
                                      compaction alone leaves the watch cache's window)
  POST /control/drop-watches          close every open watch stream (silently, like W6)
  POST /control/refuse?seconds=N      close connections and answer nothing for N seconds
  POST /control/restart?seconds=N     a kube-apiserver restart as clients see it: open
                                      watches are cut (no last chunk, no close frame), every
                                      connection drops, none is served for N seconds (default
                                      0); the caches restart one revision past the last
                                      (the new process's own writes), the answer's
                                      restartResourceVersion M: a watch resumed from any
                                      older RV gets the 410 ERROR event too old resource
                                      version: RV (M). LISTs at any RV, RV unset/0 watches
                                      and watch-lists still answer
  POST /control/slow?ms=N[&path=P]    delay every response by N ms (0 turns it off); with
                                      P only those to paths starting with P
  POST /control/load?resource=pods&count=N&namespaces=K&nodes=M
                                      bulk-create realistic objects (pods ~5 KB with labels,
                                      annotations, managedFields, ownerReferences) spread
                                      over namespaces load-0..K-1 and nodes node-0..M-1
  POST /control/churn?rate=R&seconds=S
                                      random creates/updates/deletes of pods and configmaps
                                      in namespace "churn" at R per second for S seconds
  POST /control/silent-update?resource=pods&namespace=NS&name=N
                                      change an object's content and RV without a watch
                                      event (drift tests)

Signals: SIGTERM and SIGINT stop the server cleanly.
)";

struct Flags {
  std::string listen = "127.0.0.1:0";
  testapi::HttpServerOptions http;
  testapi::ApiServerOptions api;
  std::string resources;
  int64_t history_size = 10000;
  bool sample_data = false;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Flags parseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    auto eq = a.find('=');
    bool has_inline = a.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_inline) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto next = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) throw std::runtime_error("flag " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << kHelp;
      std::exit(0);
    } else if (a == "--listen") f.listen = next();
    else if (a == "--tls-cert-file") f.http.tls_cert_file = next();
    else if (a == "--tls-private-key-file") f.http.tls_key_file = next();
    else if (a == "--client-ca-file") f.http.client_ca_file = next();
    else if (a == "--token") f.api.token = next();
    else if (a == "--feature-gates") {
      std::string error;
      if (!testapi::setFeatureGates(next(), error)) throw std::runtime_error("--feature-gates: " + error);
    }
    else if (a == "--authn") f.api.authn = true;
    else if (a == "--resources") f.resources = next();
    else if (a == "--bookmark-interval") {
      std::string v = next();
      if (!v.empty() && v.back() == 's') v.pop_back();
      f.api.bookmark_interval = std::chrono::seconds(std::stoll(v));
    } else if (a == "--history-size") f.history_size = std::stoll(next());
    else if (a == "--enable-control") f.api.enable_control = true;
    else if (a == "--sample-data") f.sample_data = true;
    else throw std::runtime_error("unknown flag " + a + " (see --help)");
  }
  auto colon = f.listen.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("--listen wants ADDR:PORT");
  f.http.address = f.listen.substr(0, colon);
  f.http.port = static_cast<uint16_t>(std::stoi(f.listen.substr(colon + 1)));
  if (f.http.tls_cert_file.empty() != f.http.tls_key_file.empty())
    throw std::runtime_error("--tls-cert-file and --tls-private-key-file go together");
  return f;
}

testapi::ResourceCatalog loadCatalog(const std::string& path) {
  if (!path.empty()) return testapi::ResourceCatalog::fromYaml(readFile(path));
#ifdef KTA_SOURCE_DIR
  std::ifstream probe(std::string(KTA_SOURCE_DIR) + "/resources.yaml");
  if (probe) return testapi::ResourceCatalog::fromYaml(readFile(std::string(KTA_SOURCE_DIR) + "/resources.yaml"));
#endif
  return testapi::ResourceCatalog::builtinDefault();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Flags flags = parseFlags(argc, argv);
    // Signals are handled by sigwait on the main thread: block them before any thread starts.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    testapi::ResourceCatalog catalog = loadCatalog(flags.resources);
    testapi::StorageOptions sopts;
    sopts.history_size = static_cast<size_t>(std::max<int64_t>(1, flags.history_size));
    testapi::Storage storage(catalog, sopts);
    testapi::ApiServer* api_ptr = nullptr;
    testapi::HttpServer server(flags.http, [&](const testapi::HttpRequest& req, testapi::ResponseStream& out) {
      api_ptr->handle(req, out);
    });
    uint16_t port = server.start();
    flags.api.server_address = flags.http.address + ":" + std::to_string(port);
    testapi::ApiServer api(catalog, storage, flags.api);
    api_ptr = &api;
    api.setHttpServer(&server);
    api.createDefaultNamespaces();
    if (flags.sample_data) api.loadSampleData();

    std::thread serve([&] { server.run(); });
    std::cout << "listening on " << flags.http.address << ":" << port << std::endl;
    int sig = 0;
    sigwait(&sigs, &sig);
    std::cerr << "received signal " << sig << ", shutting down" << std::endl;
    server.stop();
    serve.join();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "kube-test-apiserver: " << e.what() << std::endl;
    return 1;
  }
}
