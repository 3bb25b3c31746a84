// cache_bench: ingestion, LIST and memory numbers of the cache module on generated
// pods (see docs/design/store.md for results). Usage:
//   cache_bench                 all throughput benchmarks, then memory at 10k/100k pods
//   cache_bench throughput      only the throughput benchmarks
//   cache_bench rss N [strip|fixture|compressed|fixture-compressed]  memory of a store
//                               holding N pods (one process per run); fixture: pods made
//                               from the API fixtures' Pod; compressed: all packed first
//   cache_bench ingest N        N rounds of parse + replace of the 10,000-pod list, for a
//                               profiler (perf record -g cache_bench ingest 20)
//   cache_bench pack            packing old versions (--store-encoding history): CPU per
//                               pack and unpack, bytes kept per version
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <simdjson.h>

#include "cache/object_meta_parser.h"
#include "cache/thread_safe_store.h"
#include "cache/packing/packed_object.h"
#include "tests/bench/fixture_pods.h"
#include "tests/bench/pod_generator.h"

namespace {

using Clock = std::chrono::steady_clock;

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Best of `runs` in thread CPU time: the benchmark machine is shared, so wall time
// mostly measures the other tenants. last_wall_ holds the wall time of that best run.
double last_wall = 0;
double bestSeconds(int runs, const std::function<void()>& body) {
  double best = 1e9;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    const double cpu_start = threadCpuSeconds();
    body();
    const double cpu = threadCpuSeconds() - cpu_start;
    if (cpu < best) {
      best = cpu;
      last_wall = std::chrono::duration<double>(Clock::now() - start).count();
    }
  }
  return best;
}

long rssKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

std::shared_ptr<const cache::FieldSpec> podFields() {
  auto spec = std::make_shared<cache::FieldSpec>();
  spec->fields = {{"spec.nodeName", {"spec", "nodeName"}},
                  {"spec.restartPolicy", {"spec", "restartPolicy"}},
                  {"spec.schedulerName", {"spec", "schedulerName"}},
                  {"spec.serviceAccountName", {"spec", "serviceAccountName"}},
                  {"spec.hostNetwork", {"spec", "hostNetwork"}},
                  {"status.phase", {"status", "phase"}},
                  {"status.podIP", {"status", "podIP"}},
                  {"status.nominatedNodeName", {"status", "nominatedNodeName"}}};
  return spec;
}

cache::StoreOptions podStoreOptions() {
  cache::StoreOptions options;
  options.indexes = {cache::indexes::byNamespace(), cache::indexes::byLabels(), cache::indexes::byField("spec.nodeName")};
  return options;
}

cache::ParserOptions podParserOptions(bool strip) {
  return cache::ParserOptions{.field_spec = podFields(), .strip_managed_fields = strip, .kind = "Pod", .api_version = "v1"};
}

int runRss(int pods, bool strip, bool fixture, bool compressed) {
  std::string fixture_json;
  if (fixture) {
    std::ifstream in(bench::fixturePodPath(), std::ios::binary);
    fixture_json.assign(std::istreambuf_iterator<char>(in), {});
    if (fixture_json.empty()) return std::fprintf(stderr, "no fixture at %s\n", bench::fixturePodPath().c_str()), 1;
  }
  const long baseline = rssKiB();
  cache::ThreadSafeStore store(podStoreOptions(), cache::RealClock::instance());
  std::vector<cache::ObjectConstSharedPtr> items;
  items.reserve(static_cast<size_t>(pods));
  {
    cache::ObjectMetaParser parser(podParserOptions(strip));
    constexpr int kBatch = 10000;
    for (int first = 0; first < pods; first += kBatch) {
      const int count = std::min(kBatch, pods - first);
      simdjson::padded_string body(fixture ? bench::fixturePodList(fixture_json, first, count, 900000)
                                           : bench::generatePodList(first, count, 900000, pods));
      auto list = parser.parseList(simdjson::padded_string_view(body));
      if (!list) return std::fprintf(stderr, "parse: %s\n", list.error().message.c_str()), 1;
      for (auto& item : list->items) items.push_back(std::move(item));
    }
  }
  if (!store.replace(std::move(items), 900000)) return 1;
  items = {};
  double pack_seconds = 0;
  if (compressed) {  // --store-encoding compressed: what the background thread does after a sync
    const auto start = std::chrono::steady_clock::now();
    while (store.packCurrent(1024) == 1024) {
    }
    pack_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  malloc_trim(0);
  const long rss = rssKiB();
  const auto& stats = store.stats();
  const double json_mb = static_cast<double>(stats.json_bytes) / 1048576.0;
  const double delta_mb = static_cast<double>(rss - baseline) / 1024.0;
  const double rss_mb = static_cast<double>(rss) / 1024.0;
  if (compressed) {
    std::printf("compressed: %llu of %zu objects packed in %.2f s, %.1f MB deflated\n",
                static_cast<unsigned long long>(stats.packed_objects.load()), static_cast<size_t>(pods), pack_seconds,
                static_cast<double>(stats.packed_bytes.load()) / 1048576.0);
  }
  std::printf("| %d%s%s | %s | %.1f | %.1f | %.1f | %.3f | %.1f | %s |\n", pods, fixture ? " fixture" : "",
              compressed ? " compressed" : "",
              strip ? "yes" : "no", json_mb,
              static_cast<double>(stats.overhead_bytes) / 1048576.0, delta_mb, delta_mb / json_mb, rss_mb,
              rss_mb <= 1.2 * json_mb + 20.0 ? "yes" : "NO");
  return 0;
}

void runThroughput() {
  constexpr int kPods = 10000;
  simdjson::padded_string body(bench::generatePodList(0, kPods, 900000, kPods));
  const double mb = static_cast<double>(body.size()) / 1e6;
  std::printf("PodList: %d pods, %.1f MB, %.0f bytes/pod\n\n", kPods, mb, static_cast<double>(body.size()) / kPods);
  std::printf("| benchmark | best CPU time | throughput (CPU) |\n|---|---|---|\n");

  for (bool strip : {false, true}) {
    cache::ObjectMetaParser parser(podParserOptions(strip));
    // Results are kept alive until after the timed region: freeing them is not ingestion.
    std::vector<cache::ParsedList> parsed;
    std::vector<std::unique_ptr<cache::ThreadSafeStore>> stores;
    const double parse = bestSeconds(7, [&] {
      auto list = parser.parseList(simdjson::padded_string_view(body));
      if (!list || list->items.size() != kPods) std::abort();
      parsed.push_back(std::move(*list));
    });
    parsed.clear();
    std::printf("| parse list%s | %.1f ms | %.0f MB/s |\n", strip ? " (strip managedFields)" : "", parse * 1e3, mb / parse);
    const double ingest = bestSeconds(7, [&] {
      auto& store = stores.emplace_back(std::make_unique<cache::ThreadSafeStore>(podStoreOptions(), cache::RealClock::instance()));
      auto list = parser.parseList(simdjson::padded_string_view(body));
      if (!list || !store->replace(std::move(list->items), list->resource_version)) std::abort();
    });
    stores.clear();
    std::printf("| parse + replace into indexed store%s | %.1f ms | %.0f MB/s |\n", strip ? " (strip)" : "",
                ingest * 1e3, mb / ingest);
  }

  cache::ObjectMetaParser parser(podParserOptions(false));
  cache::ThreadSafeStore store(podStoreOptions(), cache::RealClock::instance());
  {
    auto list = parser.parseList(simdjson::padded_string_view(body));
    if (!list || !store.replace(std::move(list->items), list->resource_version)) std::abort();
  }

  // Watch stream: one MODIFIED line per pod, parsed in place in a padded buffer and applied.
  std::string stream;
  for (int i = 0; i < kPods; ++i) {
    std::string pod = bench::generatePod(i, 900001 + static_cast<uint64_t>(i), kPods);
    stream += R"({"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1",)" + pod.substr(1) + "}\n";
  }
  simdjson::padded_string padded_stream(stream);
  const double stream_mb = static_cast<double>(stream.size()) / 1e6;
  const double watch_start = threadCpuSeconds();
  size_t pos = 0;
  while (pos < padded_stream.size()) {
    const size_t end = std::string_view(padded_stream.data(), padded_stream.size()).find('\n', pos);
    auto event = parser.parseWatchEvent(
        simdjson::padded_string_view(padded_stream.data() + pos, end - pos, padded_stream.size() + simdjson::SIMDJSON_PADDING - pos));
    if (!event || !store.apply(event->type, std::move(event->object))) std::abort();
    pos = end + 1;
  }
  const double watch = threadCpuSeconds() - watch_start;
  std::printf("| parse + apply %d MODIFIED watch events | %.1f ms | %.0f MB/s, %.0f events/s |\n", kPods, watch * 1e3,
              stream_mb / watch, kPods / watch);

  cache::SnapshotConstSharedPtr snapshot;
  const double take = bestSeconds(20, [&] {
    (void)store.bookmark(store.currentRV() + 1);  // forces a fresh snapshot object
    snapshot = store.snapshot();
  });
  std::printf("| take a snapshot of %zu objects (%zu chunks) | %.1f us | |\n", snapshot->size(), snapshot->chunkCount(),
              take * 1e6);
  const double list = bestSeconds(20, [&] {
    auto page = store.snapshot()->list({});
    if (page.items.size() != kPods) std::abort();
  });
  std::printf("| LIST %d from a snapshot (pointers) | %.2f ms | |\n", kPods, list * 1e3);
  size_t body_size = 0;
  const double list_body = bestSeconds(10, [&] {
    auto page = store.snapshot()->list({});
    std::string out = R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[)";
    size_t total = out.size();
    for (const auto& o : page.items) total += o->byteSize() + 1;
    out.reserve(total + 2);
    for (size_t i = 0; i < page.items.size(); ++i) {
      if (i) out += ',';
      page.items[i]->appendWithoutTypeMeta(out);
    }
    out += "]}";
    body_size = out.size();
  });
  std::printf("| LIST %d + write the PodList body | %.1f ms | %.0f MB/s |\n", kPods, list_body * 1e3,
              static_cast<double>(body_size) / 1e6 / list_body);
  const double selector = bestSeconds(20, [&] {
    auto page = store.snapshot()->list(
        {.predicate = [](const cache::Object& o) { return cache::lookup(o.meta().labels, "version") == "v1.2"; }});
    if (page.items.size() != kPods / 4) std::abort();
  });
  std::printf("| LIST with label selector by snapshot scan | %.2f ms | |\n", selector * 1e3);
  const std::string node_index = cache::indexes::fieldIndexName("spec.nodeName");
  const double by_node = bestSeconds(200, [&] {
    if (store.byIndex(node_index, "node-7").size() != kPods / 500) std::abort();
  });
  std::printf("| LIST by spec.nodeName index (20 pods) | %.1f us | |\n", by_node * 1e6);
  const double page = bestSeconds(20, [&] {
    if (store.snapshot()->list({.start_key = "team-3/web-5", .limit = 500}).items.size() != 500) std::abort();
  });
  std::printf("| one page (limit 500, continue key) | %.1f us | |\n", page * 1e6);

  const uint64_t before_writes = store.currentRV();
  for (int i = 0; i < 1000; ++i) {
    auto event = parser.parseWatchEvent(R"({"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1",)" +
                                        bench::generatePod(i * 7, store.currentRV() + 1, kPods).substr(1) + "}");
    if (!event || !store.apply(event->type, std::move(event->object))) std::abort();
  }
  const double historical_start = threadCpuSeconds();
  auto historical = store.snapshotAt(before_writes);
  const double historical_time = threadCpuSeconds() - historical_start;
  if (!historical) std::abort();
  std::printf("| Exact snapshot 1000 events back (undo) | %.2f ms | |\n\n", historical_time * 1e3);
  const auto& stats = store.stats();
  std::printf("store: %llu objects, %.1f MB JSON, %.1f MB overhead, %llu history events holding %.1f MB\n\n",
              static_cast<unsigned long long>(stats.objects.load()), static_cast<double>(stats.json_bytes) / 1e6,
              static_cast<double>(stats.overhead_bytes) / 1e6, static_cast<unsigned long long>(stats.history_events.load()),
              static_cast<double>(stats.history_json_bytes) / 1e6);
}

}  // namespace

// Only the ingestion path, repeated, so a profile of the process is a profile of it.
int runIngest(int rounds) {
  constexpr int kPods = 10000;
  simdjson::padded_string body(bench::generatePodList(0, kPods, 900000, kPods));
  cache::ObjectMetaParser parser(podParserOptions(false));
  const double start = threadCpuSeconds();
  for (int i = 0; i < rounds; ++i) {
    cache::ThreadSafeStore store(podStoreOptions(), cache::RealClock::instance());
    auto list = parser.parseList(simdjson::padded_string_view(body));
    if (!list || !store.replace(std::move(list->items), list->resource_version)) return 1;
  }
  const double seconds = (threadCpuSeconds() - start) / rounds;
  std::printf("parse + replace, mean of %d rounds: %.1f ms, %.0f MB/s\n", rounds, seconds * 1e3,
              static_cast<double>(body.size()) / 1e6 / seconds);
  return 0;
}

// What the history's packer does per superseded version: pack() against the resource's
// dictionary (its first pods, up to 64 KiB), and what a resume or Exact read does per
// version: unpack().
int runPack() {
  constexpr int kPods = 10000;
  simdjson::padded_string body(bench::generatePodList(0, kPods, 900000, kPods));
  cache::ObjectMetaParser parser(podParserOptions(false));
  auto list = parser.parseList(simdjson::padded_string_view(body));
  if (!list) return 1;
  const auto& pods = list->items;
  std::vector<std::string_view> samples;  // the first pods, as the history takes them
  for (size_t i = 0; i < 100 && i < pods.size(); ++i) samples.push_back(pods[i]->plainBytes());
  const auto dictionary = cache::PackDictionary::fromSamples(samples);
  std::vector<cache::PackedObjectConstSharedPtr> packed(pods.size());
  const double pack = bestSeconds(5, [&] {
    for (size_t i = 0; i < pods.size(); ++i) packed[i] = cache::PackedObject::pack(*pods[i], dictionary);
  });
  size_t unpacked_bytes = 0;
  const double unpack = bestSeconds(5, [&] {
    for (const auto& p : packed) unpacked_bytes += p->unpack()->byteSize();
  });
  double plain = 0, kept = 0, json = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    json += static_cast<double>(pods[i]->byteSize());
    plain += static_cast<double>(pods[i]->byteSize() + pods[i]->overheadBytes());
    kept += static_cast<double>(packed[i]->heapBytes());
  }
  std::printf("%d generated pods, %.0f JSON bytes each: pack %.1f us (%.0f MB/s), unpack %.1f us (%.0f MB/s) per "
              "version; kept %.0f bytes per version vs %.0f plain with its metadata (%.1fx)\n",
              kPods, json / kPods, pack * 1e6 / kPods, json / 1e6 / pack, unpack * 1e6 / kPods, json / 1e6 / unpack,
              kept / kPods, plain / kPods, plain / kept);
  return unpacked_bytes > 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "pack") return runPack();
  if (argc >= 3 && std::string(argv[1]) == "ingest") return runIngest(std::atoi(argv[2]));
  if (argc >= 3 && std::string(argv[1]) == "rss") {
    const std::string variant = argc >= 4 ? argv[3] : "";
    return runRss(std::atoi(argv[2]), variant == "strip", variant.starts_with("fixture"),
                  variant.ends_with("compressed"));
  }
  // Each memory run is a fresh process so earlier allocations do not blur its RSS.
  std::string self(4096, '\0');
  const ssize_t length = readlink("/proc/self/exe", self.data(), self.size() - 1);
  self.resize(length > 0 ? static_cast<size_t>(length) : 0);
  runThroughput();
  if (argc >= 2 && std::string(argv[1]) == "throughput") return 0;
  std::printf("| pods | strip managedFields | JSON MB | accounted overhead MB | RSS growth MB | RSS growth / JSON | process RSS MB | <= 1.2x JSON + 20 MB |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  for (const char* args : {"10000", "10000 strip", "100000", "100000 strip"}) {
    const std::string command = self + " rss " + args;
    if (std::system(command.c_str()) != 0) std::printf("| %s | failed |\n", args);
    std::fflush(stdout);
  }
  return 0;
}
