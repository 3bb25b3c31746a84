#pragma once
// A pod store wired to a WatchDispatcher through the StoreAdapter, as the informer wires
// them, plus helpers to build pods and read what a watcher received.

#include <string>
#include <vector>

#include "cache/object_meta_parser.h"
#include "cache/selectors/selectable_fields.h"
#include "cache/thread_safe_store.h"
#include "watch/fanout/cache_watcher.h"
#include "watch/store_adapter.h"
#include "watch/fanout/watch_dispatcher.h"
#include "tests/fakes/fake_clock.h"

namespace watch::testing {

inline std::string podJson(const std::string& ns, const std::string& name, uint64_t rv, const std::string& node = "",
                           const std::string& app = "web") {
  std::string spec = node.empty() ? "{}" : R"({"nodeName":")" + node + R"("})";
  return R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name + R"(","namespace":")" + ns +
         R"(","resourceVersion":")" + std::to_string(rv) + R"(","uid":"u-)" + name + R"(","labels":{"app":")" + app +
         R"("}},"spec":)" + spec + "}";
}

inline cache::ParserOptions podParserOptions() {
  cache::ParserOptions options;
  options.field_spec = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  options.kind = "Pod";
  options.api_version = "v1";
  return options;
}

inline cache::StoreOptions podStoreOptions() {
  cache::StoreOptions o;
  o.indexes.push_back(cache::indexes::byField("spec.nodeName"));
  return o;
}

struct PodFanout {
  cache::testing::FakeClock clock;
  cache::ThreadSafeStore store{podStoreOptions(), clock};
  cache::ObjectMetaParser parser{podParserOptions()};
  WatchDispatcher dispatcher{store, clock};
  StoreAdapter adapter{store, parser, &dispatcher};
};

inline WatchFilter filterFor(const std::string& ns, const std::string& labels = "", const std::string& fields = "") {
  auto spec = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  return WatchFilter(ns, cache::LabelSelector::parse(labels).value(), cache::FieldSelector::parse(fields, *spec).value());
}

// "TYPE name@rv" for each queued event, "BOOKMARK@rv" for bookmarks.
inline std::vector<std::string> drain(CacheWatcher& w) {
  std::vector<QueuedFrame> frames;
  w.takeAll(frames);
  std::vector<std::string> out;
  for (const auto& f : frames) {
    if (f.bookmark()) {
      out.push_back("BOOKMARK@" + std::to_string(f.resource_version));
      continue;
    }
    const std::string& s = f.frame->bytes();
    const auto type_begin = s.find(":\"") + 2;
    const std::string type = s.substr(type_begin, s.find('"', type_begin) - type_begin);
    const auto name_begin = s.find(R"("name":")") + 8;
    const std::string name = s.substr(name_begin, s.find('"', name_begin) - name_begin);
    out.push_back(type + " " + name + "@" + std::to_string(f.resource_version));
  }
  return out;
}

}  // namespace watch::testing
