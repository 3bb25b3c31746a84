#pragma once
// A bounded, expiring map from a request's identity key to a review's outcome, shared by
// every io thread (so one mutex). Entries live `ttl` from when they were stored, never
// longer: an RBAC change or a revoked token is seen at most `ttl` late. Beyond
// `max_entries`, or `max_bytes` of keys (a key carries path segments up to the header
// limit, so a count alone bounds nothing; issue 16, finding 5), the least recently used
// entries go, so a flood of distinct tokens or names cannot grow memory.

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "cache/clock.h"

namespace proxy::auth {

template <class Value>
class DecisionCache {
 public:
  static constexpr size_t kDefaultMaxBytes = 64u << 20;
  DecisionCache(std::chrono::milliseconds ttl, size_t max_entries, const cache::Clock& clock = cache::RealClock::instance(),
                size_t max_bytes = kDefaultMaxBytes)
      : ttl_(ttl), max_entries_(max_entries), max_bytes_(max_bytes), clock_(clock) {}
  DecisionCache(const DecisionCache&) = delete;
  DecisionCache& operator=(const DecisionCache&) = delete;

  std::optional<Value> find(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    if (clock_.now() >= it->second->expires) {
      bytes_ -= entryBytes(it->second->key);
      lru_.erase(it->second);
      index_.erase(it);
      return std::nullopt;
    }
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->value;
  }

  void put(const std::string& key, Value value) {
    if (ttl_.count() <= 0 || max_entries_ == 0) return;  // caching off
    if (entryBytes(key) > max_bytes_ / 16) return;        // one key may not take the cache over
    std::lock_guard lock(mu_);
    const auto expires = clock_.now() + ttl_;
    if (auto it = index_.find(key); it != index_.end()) {
      it->second->value = std::move(value);
      it->second->expires = expires;
      lru_.splice(lru_.begin(), lru_, it->second);
      return;
    }
    lru_.push_front(Entry{key, std::move(value), expires});
    index_.emplace(key, lru_.begin());
    bytes_ += entryBytes(key);
    while (index_.size() > max_entries_ || bytes_ > max_bytes_) {
      bytes_ -= entryBytes(lru_.back().key);
      index_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }

  // Bytes the entries' keys take (each is held twice: list and index).
  size_t bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return index_.size();
  }

 private:
  struct Entry {
    std::string key;
    Value value;
    cache::Clock::TimePoint expires;
  };
  static size_t entryBytes(const std::string& key) { return 2 * key.size() + sizeof(Entry) + 64; }

  const std::chrono::milliseconds ttl_;
  const size_t max_entries_;
  const size_t max_bytes_;
  size_t bytes_ = 0;  // guarded by mu_
  const cache::Clock& clock_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
};

}  // namespace proxy::auth
