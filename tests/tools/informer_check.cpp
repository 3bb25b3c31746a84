// informer-check: one Reflector wired exactly as the proxy wires it (HttpListerWatcher ->
// StoreAdapter -> ThreadSafeStore), reporting what its store holds, so integration tests
// can compare the cache with the upstream's truth under faults.
//
//   informer-check --upstream http://127.0.0.1:PORT --path /api/v1/pods [--kind Pod --api-version v1]
//                  [--no-watch-list]          (full states from paged LIST only)
//                  [--history-max-age SECS]   (the store's history window by age; default 150)
//                  [--backoff-cap-ms MS]      (the retry backoff's cap; default client-go's 30 s)
//
// Prints "synced" once the first full state is in the store, then answers each command
// line on stdin with one JSON line (every answer also carries "rv" (store RV), "relists"
// (full states received, the first sync included) and "last_sync_rv" (list RV of the
// latest one)):
//   dump             {"dump":{"ns/name":"rv",...}}
//   dump-bytes       {"objects":{"ns/name":["rv","<sha256 of the stored bytes>",
//                                           "<sha256 of the bytes as a list item>"],...}}
//                    The list-item form is what a LIST writes (kind/apiVersion cut, L1), so
//                    it compares byte for byte with the items of an upstream LIST.
//   history RV       {"history":[["ADDED","ns/name","rv","<sha256 of the event object>"],...]}
//                    The store's history events after RV, in order; {"error":"..."} when
//                    RV is outside the window. Events after last_sync_rv all came from the
//                    watch stream; a relist that changed the state restarts the history.
// Reflector log lines go to stderr. Ends at EOF on stdin or on SIGTERM/SIGINT.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <openssl/evp.h>

#include "cache/object_meta_parser.h"
#include "cache/selectors/selectable_fields.h"
#include "cache/thread_safe_store.h"
#include "proxy/upstream/http_lister_watcher.h"
#include "proxy/upstream/upstream_options.h"
#include "watch/reflector/reflector.h"
#include "watch/reflector/relist_limiter.h"
#include "watch/store_adapter.h"

namespace {

struct Args {
  std::string upstream;
  std::string path = "/api/v1/pods";
  std::string kind = "Pod";
  std::string api_version = "v1";
  bool use_watch_list = true;
  std::chrono::seconds history_max_age{150};
  std::chrono::milliseconds backoff_cap{30'000};
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "informer-check: " << why << "\n"
            << "usage: informer-check --upstream http://HOST:PORT --path /api/v1/pods [--kind Pod] "
               "[--api-version v1] [--no-watch-list] [--history-max-age SECS] [--backoff-cap-ms MS]\n";
  std::exit(2);
}

Args parseArgs(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--no-watch-list") {
      args.use_watch_list = false;
      continue;
    }
    if (i + 1 >= argc) usage("missing value for " + std::string(flag));
    std::string value = argv[++i];
    if (flag == "--upstream") args.upstream = value;
    else if (flag == "--path") args.path = value;
    else if (flag == "--kind") args.kind = value;
    else if (flag == "--api-version") args.api_version = value;
    else if (flag == "--history-max-age") args.history_max_age = std::chrono::seconds(std::stoll(value));
    else if (flag == "--backoff-cap-ms") args.backoff_cap = std::chrono::milliseconds(std::stoll(value));
    else usage("unknown flag " + std::string(flag));
  }
  if (args.upstream.empty()) usage("--upstream is required");
  return args;
}

// Only plain http://host:port[/prefix] upstreams: the tool talks to the loopback test
// apiserver. TLS is covered by the lister-watcher's own tests.
proxy::UpstreamOptions parseUpstream(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  if (url.rfind(scheme, 0) != 0) usage("--upstream must start with http://");
  std::string rest = url.substr(scheme.size());
  proxy::UpstreamOptions upstream;
  upstream.scheme = "http";
  size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    upstream.path_prefix = rest.substr(slash);
    if (upstream.path_prefix == "/") upstream.path_prefix.clear();
    rest.resize(slash);
  }
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos) usage("--upstream needs an explicit port");
  upstream.host = rest.substr(0, colon);
  upstream.port = static_cast<uint16_t>(std::stoul(rest.substr(colon + 1)));
  return upstream;
}

// "/api/v1/pods" -> ("", "v1", "pods"); "/apis/apps/v1/deployments" -> ("apps", "v1", ...).
// Cluster-scoped resources still parse fine as namespaced for the fields this tool uses.
std::shared_ptr<const cache::FieldSpec> fieldSpecFor(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  if (parts.size() == 3 && parts[0] == "api") return cache::FieldSpec::forBuiltin("", parts[1], parts[2], true);
  if (parts.size() == 4 && parts[0] == "apis") return cache::FieldSpec::forBuiltin(parts[1], parts[2], parts[3], true);
  return nullptr;
}

void appendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

std::string sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

// The members every answer ends with, after its own.
void appendStatus(std::string& out, uint64_t store_rv, const watch::Reflector& reflector) {
  out += R"(,"rv":)";
  appendJsonString(out, std::to_string(store_rv));
  out += R"(,"relists":)";
  out += std::to_string(reflector.stats().upstream_relists_total.load());
  out += R"(,"last_sync_rv":)";
  appendJsonString(out, std::to_string(reflector.stats().last_sync_resource_version.load()));
  out += "}";
}

// `with_bytes`: each value is [rv, sha256(json), sha256(list item form)] instead of rv.
std::string dumpLine(const cache::ThreadSafeStore& store, const watch::Reflector& reflector, bool with_bytes) {
  cache::SnapshotConstSharedPtr snapshot = store.snapshot();
  std::string out = with_bytes ? R"({"objects":{)" : R"({"dump":{)";
  bool first = true;
  std::string item;
  snapshot->forEach([&](const cache::ObjectConstSharedPtr& object) {
    if (!first) out += ',';
    first = false;
    appendJsonString(out, object->key());
    out += ':';
    if (!with_bytes) {
      appendJsonString(out, std::to_string(object->resourceVersion()));
      return true;
    }
    item.clear();
    object->appendWithoutTypeMeta(item);
    out += '[';
    appendJsonString(out, std::to_string(object->resourceVersion()));
    out += ',';
    std::string buffer;  // a packed object unpacks here
    appendJsonString(out, sha256Hex(object->bytes(buffer)));
    out += ',';
    appendJsonString(out, sha256Hex(item));
    out += ']';
    return true;
  });
  out += '}';
  appendStatus(out, snapshot->resourceVersion(), reflector);
  return out;
}

std::string historyLine(const cache::ThreadSafeStore& store, const watch::Reflector& reflector, std::string_view after) {
  const uint64_t store_rv = store.currentRV();
  std::string out = "{";
  auto rv = cache::parseObjectResourceVersion(after);
  auto cursor = rv ? store.watchCursor(*rv) : cache::Result<cache::HistoryCursor>(cache::fail(cache::Reason::BadRequest, "bad RV"));
  std::vector<cache::WatchEvent> events;
  while (cursor) {
    const size_t before = events.size();
    if (auto read = store.readEvents(*cursor, 4096, events); !read) {
      cursor = cache::Unexpected{read.error()};
      break;
    }
    if (events.size() == before) break;
  }
  if (!cursor) {
    out += R"("error":)";
    appendJsonString(out, cursor.error().message);
  } else {
    out += R"("history":[)";
    for (size_t i = 0; i < events.size(); ++i) {
      const cache::WatchEvent& event = events[i];
      if (i) out += ',';
      out += '[';
      appendJsonString(out, cache::wireName(event.type));
      out += ',';
      appendJsonString(out, event.object->key());
      out += ',';
      appendJsonString(out, std::to_string(event.resource_version));
      out += ',';
      std::string buffer;
      appendJsonString(out, sha256Hex(event.object->bytes(buffer)));
      out += ']';
    }
    out += ']';
  }
  appendStatus(out, store_rv, reflector);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parseArgs(argc, argv);

  cache::ParserOptions parser_options;
  parser_options.field_spec = fieldSpecFor(args.path);
  parser_options.kind = args.kind;
  parser_options.api_version = args.api_version;
  cache::ObjectMetaParser parser(parser_options);
  cache::StoreOptions store_options;
  store_options.history.max_age = args.history_max_age;
  cache::ThreadSafeStore store(std::move(store_options), cache::RealClock::instance());
  watch::StoreAdapter adapter(store, parser);

  proxy::upstream::HttpListerWatcher lister_watcher(parseUpstream(args.upstream), args.path);
  cache::RealClock& clock = cache::RealClock::instance();
  watch::UnlimitedRelistLimiter relist_limiter;

  std::mutex out_mu;
  auto println = [&](const std::string& line) {
    std::lock_guard lock(out_mu);
    std::cout << line << std::endl;
  };

  watch::ReflectorOptions options;
  options.name = args.path;
  options.use_watch_list = args.use_watch_list;
  options.backoff.cap = args.backoff_cap;
  options.log = [](watch::LogLevel, std::string_view message) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
  };
  watch::Reflector reflector(std::move(options), lister_watcher, adapter, clock, relist_limiter);
  reflector.start();

  // Announces HasSynced. The store's RV wait has no "synced" flavor, so this polls the
  // reflector's flag with a short period; it ends with the process.
  std::jthread announcer([&](std::stop_token stop) {
    while (!stop.stop_requested()) {
      if (reflector.hasSynced()) {
        println("synced");
        return;
      }
      clock.sleepFor(std::chrono::milliseconds(10), stop);
    }
  });

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "dump") println(dumpLine(store, reflector, false));
    else if (line == "dump-bytes") println(dumpLine(store, reflector, true));
    else if (line.rfind("history ", 0) == 0) println(historyLine(store, reflector, std::string_view(line).substr(8)));
    else if (!line.empty()) std::cerr << "informer-check: unknown command " << line << "\n";
  }
  announcer.request_stop();
  announcer.join();
  reflector.stop();
  return 0;
}
