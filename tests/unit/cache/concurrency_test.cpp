// One writer, many readers: readers must only ever see whole writes (run under
// -DKCP_TSAN=ON as well).
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "cache/thread_safe_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/unit/cache/test_objects.h"

namespace cache {

TEST_CASE("Readers see whole writes while one writer applies events and relists") {
  testing::FakeClock clock;
  StoreOptions options;
  options.indexes = {indexes::byNamespace(), indexes::byLabels(), indexes::byField("spec.nodeName")};
  ThreadSafeStore store(options, clock);
  constexpr uint64_t kBase = 1000;
  constexpr int kAdds = 1500;
  REQUIRE(store.replace({}, kBase).has_value());

  // Objects are built before the race so that readers and the writer only share the store.
  std::vector<ObjectConstSharedPtr> pods;
  for (int i = 1; i <= kAdds; ++i) {
    pods.push_back(testing::makePod("ns", "p" + std::to_string(100000 + i), kBase + i, {{"i", std::to_string(i % 7)}},
                                    "node-" + std::to_string(i % 5)));
  }
  std::atomic<bool> adding{true};
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<long> reads{0};

  auto reader = [&](unsigned seed) {
    std::mt19937_64 random(seed);
    while (!done.load()) {
      // In the add phase the state at RV r is exactly the first r - kBase pods.
      auto snapshot = store.snapshot();
      const uint64_t rv = snapshot->resourceVersion();
      auto page = snapshot->list({});
      bool sorted = true;
      for (size_t i = 1; i < page.items.size(); ++i) sorted = sorted && page.items[i - 1]->key() < page.items[i]->key();
      if (!sorted) failures.fetch_add(1);
      if (adding.load() && rv <= kBase + kAdds && snapshot->size() != rv - kBase && store.currentRV() <= kBase + kAdds) {
        // A relist may have begun after `adding` was read; only count clear violations.
        if (adding.load()) failures.fetch_add(1);
      }
      const uint64_t current = store.currentRV();
      if (adding.load() && current > kBase && current <= kBase + kAdds) {
        const uint64_t at = kBase + random() % (current - kBase + 1);
        auto old = store.snapshotAt(at);
        if (old && adding.load() && (*old)->size() != at - kBase) failures.fetch_add(1);
      }
      auto on_node = store.byIndex(indexes::fieldIndexName("spec.nodeName"), "node-3");
      for (const auto& o : on_node) {
        if (lookup(o->meta().fields, "spec.nodeName") != "node-3") failures.fetch_add(1);
      }
      (void)store.get("ns/p100001");
      reads.fetch_add(1);
    }
  };
  std::vector<std::jthread> readers;
  for (unsigned r = 0; r < 3; ++r) readers.emplace_back(reader, r);

  for (const auto& pod : pods) REQUIRE(store.apply(EventType::Added, pod).has_value());
  adding.store(false);
  // Relists that drop and re-add half of the objects.
  for (int round = 0; round < 20; ++round) {
    std::vector<ObjectConstSharedPtr> items;
    for (size_t i = round % 2; i < pods.size(); i += 2) items.push_back(pods[i]);
    REQUIRE(store.replace(items, store.currentRV() + 10).has_value());
  }
  done.store(true);
  readers.clear();
  CHECK(failures.load() == 0);
  CHECK(reads.load() > 0);
  CHECK(store.stats().objects == kAdds / 2);
}

}  // namespace cache

namespace cache {

TEST_CASE("Packing the history races neither the writer nor readers resuming and reading at old RVs") {
  testing::FakeClock clock;
  ThreadSafeStore store(StoreOptions{}, clock);
  constexpr uint64_t kBase = 1000;
  constexpr int kKeys = 20;
  constexpr int kWrites = 1200;
  std::vector<ObjectConstSharedPtr> initial;
  for (int k = 0; k < kKeys; ++k) initial.push_back(testing::makePod("ns", "p" + std::to_string(10 + k), kBase - 1));
  REQUIRE(store.replace(initial, kBase).has_value());
  // Built before the race: the writer, the packer and the readers share only the store.
  std::vector<ObjectConstSharedPtr> versions;
  for (int i = 1; i <= kWrites; ++i) {
    versions.push_back(testing::makePod("ns", "p" + std::to_string(10 + i % kKeys), kBase + i, {{"i", std::to_string(i)}}));
  }
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<long> packed{0};

  std::jthread packer([&] {
    while (!done.load()) packed += static_cast<long>(store.packHistory(16));
  });
  auto reader = [&](unsigned seed) {
    std::mt19937_64 random(seed);
    while (!done.load()) {
      const uint64_t current = store.currentRV();
      const uint64_t rv = kBase + random() % (current - kBase + 1);
      // A resume from rv: consecutive RVs, each a change of the key its previous version had.
      auto cursor = store.watchCursor(rv);
      if (cursor) {
        std::vector<WatchEvent> events;
        if (store.readEvents(*cursor, 64, events)) {
          uint64_t want = rv + 1;
          for (const auto& e : events) {
            if (e.resource_version != want++ || e.object->resourceVersion() != e.resource_version ||
                !e.prev_object || e.prev_object->key() != e.object->key() ||
                e.prev_object->resourceVersion() >= e.resource_version) {
              ++failures;
            }
          }
        }
      }
      // The state at rv: every key once, none newer than rv.
      if (auto snapshot = store.snapshotAt(rv)) {
        const auto items = (*snapshot)->list({}).items;
        if (items.size() != kKeys) ++failures;
        for (const auto& o : items) failures += o->resourceVersion() > rv ? 1 : 0;
      }
    }
  };
  {
    std::vector<std::jthread> readers;
    for (unsigned r = 0; r < 2; ++r) readers.emplace_back(reader, r);
    for (const auto& v : versions) REQUIRE(store.apply(EventType::Modified, v).has_value());
    while (store.packHistory(SIZE_MAX) > 0) {
    }
    done = true;
  }
  packer.join();
  CHECK(failures.load() == 0);
  CHECK(store.stats().history_packed_versions.load() == kWrites);
  MESSAGE(packed.load() << " versions packed during the race");
}

}  // namespace cache

namespace cache {

TEST_CASE("Packing current objects races neither the writer nor readers unpacking them") {
  testing::FakeClock clock;
  ThreadSafeStore store(StoreOptions{}, clock);
  constexpr uint64_t kBase = 1000;
  constexpr int kKeys = 200;
  constexpr int kWrites = 400;
  std::vector<ObjectConstSharedPtr> initial;
  for (int k = 0; k < kKeys; ++k) initial.push_back(testing::makePod("ns", "p" + std::to_string(1000 + k), kBase - 1));
  REQUIRE(store.replace(initial, kBase).has_value());
  std::vector<std::string> want;  // every key's bytes as first listed
  for (const auto& o : initial) want.emplace_back(testing::bytesOf(*o));
  std::vector<ObjectConstSharedPtr> versions;
  for (int i = 1; i <= kWrites; ++i) {
    // Only the first half of the keys change: the rest are packed while readers read them.
    versions.push_back(testing::makePod("ns", "p" + std::to_string(1000 + i % (kKeys / 2)), kBase + i));
  }
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<long> swapped{0};
  std::jthread packer([&] {
    while (!done.load()) swapped += static_cast<long>(store.packCurrent(32));
  });
  auto reader = [&](unsigned seed) {
    std::mt19937_64 random(seed);
    while (!done.load()) {
      // GETs and LISTs unpack packed objects, often the same ones at once.
      const int k = kKeys / 2 + static_cast<int>(random() % (kKeys / 2));
      auto o = store.get("ns/p" + std::to_string(1000 + k));
      if (!o || testing::bytesOf(*o) != want[k]) ++failures;
      const auto items = store.snapshot()->list({}).items;
      if (items.size() != kKeys) ++failures;
      for (const auto& item : items) failures += testing::bytesOf(*item).size() == item->byteSize() ? 0 : 1;
    }
  };
  {
    std::vector<std::jthread> readers;
    for (unsigned r = 0; r < 2; ++r) readers.emplace_back(reader, r);
    for (const auto& v : versions) REQUIRE(store.apply(EventType::Modified, v).has_value());
    done = true;
  }
  packer.join();
  while (store.packCurrent(SIZE_MAX) > 0) {  // what the race left plain
  }
  CHECK(failures.load() == 0);
  CHECK(store.stats().packed_objects.load() >= kKeys / 2);
  MESSAGE(swapped.load() << " objects packed during the race");
}

}  // namespace cache
