#include "tests/bench/fixture_pods.h"

#include <cstdio>
#include <cstdlib>
#include <simdjson.h>

namespace bench {

namespace {

// Replaces the first `"field":"<field>Value"` at or after `from` with `value`.
bool setFirst(std::string& json, size_t from, const std::string& field, const std::string& value) {
  const std::string placeholder = "\"" + field + "\":\"" + field + "Value\"";
  const size_t at = json.find(placeholder, from);
  if (at == std::string::npos) return false;
  json.replace(at, placeholder.size(), "\"" + field + "\":\"" + value + "\"");
  return true;
}

std::string hex(uint64_t v, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string fixturePodPath() {
  const char* env = std::getenv("KCP_FIXTURES_DIR");
  return std::string(env && *env ? env : "../shared/testdata/k8s-api-fixtures") + "/core.v1.Pod.json";
}

std::string fixturePodList(const std::string& fixture, int first, int count, uint64_t list_rv) {
  std::string minified(fixture.size(), '\0');
  size_t length = 0;
  if (simdjson::minify(fixture.data(), fixture.size(), minified.data(), length) != simdjson::SUCCESS) return "";
  minified.resize(length);
  // The item form: no kind/apiVersion (they lead the fixture).
  const size_t metadata = minified.find("\"metadata\":{");
  if (metadata == std::string::npos) return "";
  const std::string item = "{" + minified.substr(metadata);

  std::string out = R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":")" + std::to_string(list_rv) +
                    R"("},"items":[)";
  uint64_t random = 0x9e3779b97f4a7c15ULL;
  auto next = [&] { return random = random * 6364136223846793005ULL + 1442695040888963407ULL; };
  for (int i = first; i < first + count; ++i) {
    std::string pod = item;
    const std::string uid = hex(next() >> 32, 8) + "-" + hex(next() >> 48, 4) + "-4" + hex(next() >> 52, 3) + "-8" +
                            hex(next() >> 52, 3) + "-" + hex(next() >> 16, 12);
    const bool ok = setFirst(pod, 0, "name", "web-" + hex(next() >> 32, 8) + "-" + std::to_string(100000 + i)) &&
                    setFirst(pod, 0, "namespace", "team-" + std::to_string(i % 10)) && setFirst(pod, 0, "uid", uid) &&
                    setFirst(pod, 0, "resourceVersion", std::to_string(100000 + i)) &&
                    setFirst(pod, 0, "nodeName", "node-" + std::to_string(next() % 50)) &&
                    setFirst(pod, 0, "podIP", "10." + std::to_string(next() % 256) + "." + std::to_string(next() % 256) +
                                                  "." + std::to_string(next() % 256));
    if (!ok) return "";
    if (i > first) out += ",";
    out += pod;
  }
  out += "]}";
  return out;
}

}  // namespace bench
