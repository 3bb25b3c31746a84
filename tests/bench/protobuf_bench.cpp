// Which protobuf wire reader (issue 18, docs/design.md "Protobuf reader"): the ObjectMeta
// of one object read with libprotobuf-lite's CodedInputStream (cache/protobuf/protobuf_object.h)
// against a minimal hand-rolled varint walk doing the same work (name, namespace, RV and
// labels as views), and the JSON extractor on the same object for scale.
//
//   protobuf_bench FIXTURE.pb FIXTURE.json [ITERATIONS]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "cache/object_meta_parser.h"
#include "cache/protobuf/protobuf_object.h"

namespace {

std::string readFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The hand-rolled peer: just enough to find the same fields, with bounds checks.
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool varint(uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
      const uint8_t b = *p++;
      out |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool field(uint32_t& number, uint32_t& type, std::string_view& bytes) {
    uint64_t tag = 0;
    if (!varint(tag)) return false;
    number = uint32_t(tag >> 3);
    type = uint32_t(tag & 7);
    uint64_t v = 0;
    switch (type) {
      case 0: return varint(v);
      case 1: if (end - p < 8) return false; p += 8; return true;
      case 5: if (end - p < 4) return false; p += 4; return true;
      case 2:
        if (!varint(v) || v > uint64_t(end - p)) return false;
        bytes = std::string_view(reinterpret_cast<const char*>(p), v);
        p += v;
        return true;
      default: return false;
    }
  }
};

size_t handRolled(std::string_view object) {
  Cursor top{reinterpret_cast<const uint8_t*>(object.data()), reinterpret_cast<const uint8_t*>(object.data()) + object.size()};
  size_t found = 0;
  uint32_t number = 0, type = 0;
  std::string_view bytes;
  while (top.p < top.end) {
    if (!top.field(number, type, bytes)) return 0;
    if (number != 1 || type != 2) continue;
    Cursor meta{reinterpret_cast<const uint8_t*>(bytes.data()), reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size()};
    std::string_view value;
    while (meta.p < meta.end) {
      if (!meta.field(number, type, value)) return 0;
      if (number == 1 || number == 3 || number == 6) found += value.size();
      if (number == 11) found += value.size();
    }
  }
  return found;
}

template <class F>
double nanosPerCall(int iterations, F&& f) {
  size_t sink = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) sink += f();
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  if (sink == 42) std::puts("");
  return took.count() / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: protobuf_bench FIXTURE.pb FIXTURE.json [ITERATIONS]\n");
    return 2;
  }
  const std::string pb = readFile(argv[1]);
  const std::string json = readFile(argv[2]);
  const int iterations = argc > 3 ? std::atoi(argv[3]) : 200000;
  const auto envelope = cache::protobuf::parseEnvelope(pb);
  if (!envelope) return 1;
  const std::string_view raw = envelope->raw;
  cache::ObjectMetaParser parser(cache::ParserOptions{});
  for (int round = 0; round < 3; ++round) {
    const double lib = nanosPerCall(iterations, [&] {
      auto meta = cache::protobuf::parseObjectMeta(raw);
      return meta ? meta->name.size() + meta->labels.size() : 0;
    });
    const double hand = nanosPerCall(iterations, [&] { return handRolled(raw); });
    const double from_json = nanosPerCall(iterations / 10, [&] {
      auto object = parser.parseObject(json);
      return object ? size_t(1) : size_t(0);
    });
    std::printf("%zu B protobuf, %zu B JSON: CodedInputStream %.0f ns, hand-rolled %.0f ns (%.2fx), JSON extractor %.0f ns\n",
                raw.size(), json.size(), lib, hand, lib / hand, from_json);
  }
  return 0;
}
