#pragma once
// What the upstream's feature gates decide about reads, as learned from its answers. A
// gate is the apiserver's to set (--feature-gates); the proxy must answer as its upstream
// does, so where a gate changes an answer the serving side asks the upstream once and
// remembers for a while (an upgrade may flip it). Thread-safe: atomics only.
//
// ShardedListAndWatch (KEP-5866, alpha): on, a LIST or WATCH with shardSelector gets its
// shard; off, the apiserver ignores the parameter and answers the whole collection.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace proxy::io {

class UpstreamFeatures {
 public:
  enum class Gate { Unknown, On, Off };
  // How long a learned state holds before the next request that depends on it asks again.
  static constexpr std::chrono::minutes kRelearnAfter{10};

  Gate sharding(std::chrono::steady_clock::time_point now) const {
    const int64_t at = sharding_learned_at_.load(std::memory_order_acquire);
    if (at == 0 || now.time_since_epoch().count() - at > kRelearnTicks) return Gate::Unknown;
    return sharding_on_.load(std::memory_order_relaxed) ? Gate::On : Gate::Off;
  }
  void learnedSharding(bool on, std::chrono::steady_clock::time_point now) {
    sharding_on_.store(on, std::memory_order_relaxed);
    sharding_learned_at_.store(now.time_since_epoch().count(), std::memory_order_release);
  }

 private:
  static constexpr int64_t kRelearnTicks =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(kRelearnAfter).count();
  std::atomic<bool> sharding_on_{false};
  std::atomic<int64_t> sharding_learned_at_{0};  // steady_clock ticks; 0 = never
};

}  // namespace proxy::io
