// dictionary_bench: the packed objects' dictionary, measured per resource (issue #37,
// docs/design.md "Packed objects' dictionary"). For each corpus of 10,000 objects and
// each way of choosing the dictionary: bytes kept per object, packing and unpacking speed
// (cache/packing/pack_codec.h, as the store packs: one object at a time).
//   dictionary_bench            generated pods, fixture pods, generated configmaps
#include <time.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <simdjson.h>

#include "cache/packing/pack_codec.h"
#include "tests/bench/fixture_pods.h"
#include "tests/bench/pod_generator.h"

namespace {

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Best of 3 in thread CPU time: the machine is shared.
double bestSeconds(const std::function<void()>& body) {
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const double start = threadCpuSeconds();
    body();
    best = std::min(best, threadCpuSeconds() - start);
  }
  return best;
}

// The items of a list as their raw JSON.
std::vector<std::string> itemsOf(const std::string& list) {
  simdjson::dom::parser parser;
  std::vector<std::string> out;
  simdjson::dom::element doc = parser.parse(list);
  for (simdjson::dom::element item : doc["items"].get_array()) out.push_back(simdjson::minify(item));
  return out;
}

// ConfigMaps as a cluster holds them: an application's settings, a few keys of config
// text with per-object values, labels, one managedFields entry. 1-3 KB each.
std::vector<std::string> generateConfigMaps(int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    const std::string n = std::to_string(i);
    std::string data = R"("application.yaml":"server:\n  port: )" + std::to_string(8000 + i % 100) +
                       R"(\n  threads: )" + std::to_string(4 + i % 13) + R"(\nlogging:\n  level: info\n",)";
    data += R"("feature-flags":"{\"beta-)" + n + R"(\": true, \"rollout\": )" + std::to_string(i % 100) + R"(}",)";
    data += R"("endpoint":"https://svc-)" + n + R"(.team-)" + std::to_string(i % 10) + R"(.svc.cluster.local:443")";
    for (int k = 0; k < i % 8; ++k) data += R"(,"extra-)" + std::to_string(k) + R"(":"value-)" + n + "-" + std::to_string(k) + R"(")";
    out.push_back(R"({"metadata":{"name":"app-config-)" + n + R"(","namespace":"team-)" + std::to_string(i % 10) +
                  R"(","uid":"6f1c)" + std::to_string(10000000 + i * 7919) + R"(-aaaa-4bbb-8ccc-)" + std::to_string(100000000000 + i) +
                  R"(","resourceVersion":")" + std::to_string(500000 + i) + R"(","creationTimestamp":"2026-11-0)" +
                  std::to_string(1 + i % 9) + R"(T10:)" + std::to_string(10 + i % 50) +
                  R"(:00Z","labels":{"app":"svc-)" + n + R"(","tier":"backend"},"managedFields":[{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1","time":"2026-11-01T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:application.yaml":{},"f:endpoint":{},"f:feature-flags":{}},"f:metadata":{"f:labels":{".":{},"f:app":{},"f:tier":{}}}}}]},"data":{)" +
                  data + "}}");
  }
  return out;
}

struct Choice {
  const char* name;
  size_t sample_bytes;  // whole objects until this many bytes; 0: no dictionary
};

void measure(const char* corpus, const std::vector<std::string>& objects) {
  double json = 0;
  for (const auto& o : objects) json += static_cast<double>(o.size());
  std::printf("\n%s: %zu objects, %.0f bytes each\n", corpus, objects.size(), json / static_cast<double>(objects.size()));
  std::printf("| dictionary | bytes kept per object | ratio | pack MB/s | unpack MB/s |\n|---|---|---|---|---|\n");
  const Choice choices[] = {{"none", 0},
                            {"the first object", 1},
                            {"objects to 4 KiB", 4096},
                            {"objects to 8 KiB", 8192},
                            {"objects to 16 KiB", 16384},
                            {"objects to 32 KiB", 32768},
                            {"objects to 64 KiB (chosen)", 65536}};
  for (const Choice& choice : choices) {
    cache::PackDictionaryConstSharedPtr dictionary;
    if (choice.sample_bytes > 0) {
      std::vector<std::string_view> samples(objects.begin(), objects.begin() + 100);
      dictionary = cache::PackDictionary::fromSamples(samples, choice.sample_bytes);
    }
    std::vector<std::string> packed(objects.size());
    const double pack = bestSeconds([&] {
      for (size_t i = 0; i < objects.size(); ++i) packed[i] = cache::packBytes(objects[i], dictionary.get());
    });
    std::string out;
    const double unpack = bestSeconds([&] {
      for (size_t i = 0; i < objects.size(); ++i) {
        out.resize(objects[i].size());
        cache::unpackBytes(packed[i], dictionary.get(), out.data(), out.size());
      }
    });
    double kept = 0;
    for (const auto& p : packed) kept += static_cast<double>(p.size());
    std::printf("| %s (%zu B) | %.0f | %.1fx | %.0f | %.0f |\n", choice.name, dictionary ? dictionary->bytes().size() : 0,
                kept / static_cast<double>(objects.size()), json / kept, json / 1e6 / pack, json / 1e6 / unpack);
  }
}

}  // namespace

int main() {
  constexpr int kObjects = 10000;
  measure("generated pods", itemsOf(bench::generatePodList(0, kObjects, 900000, kObjects)));
  std::ifstream in(bench::fixturePodPath());
  const std::string fixture((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!fixture.empty()) measure("fixture pods (managedFields)", itemsOf(bench::fixturePodList(fixture, 0, kObjects, 900000)));
  measure("generated configmaps", generateConfigMaps(kObjects));
  return 0;
}
