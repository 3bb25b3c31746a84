#pragma once
// Bounds the watches open at once, per client and in total, so that one client
// cannot exhaust the proxy's connections, memory and fan-out (watch exhaustion).
// Beyond a bound the request gets the apiserver's max-in-flight answer (429 with
// Retry-After), and client-go backs off and retries.
//
// Shared by every io thread, hence the lock; it is taken once when a watch starts
// and once when it ends, never per event.

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace proxy {

class WatchLimiter {
 public:
  // 0 means unlimited, for each bound.
  WatchLimiter(size_t max_per_client, size_t max_total) : max_per_client_(max_per_client), max_total_(max_total) {}
  WatchLimiter(const WatchLimiter&) = delete;
  WatchLimiter& operator=(const WatchLimiter&) = delete;

  // A held watch slot; releases on destruction. Empty when refused.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept : owner_(other.owner_), key_(std::move(other.key_)) { other.owner_ = nullptr; }
    Slot& operator=(Slot&& other) noexcept;
    ~Slot() { release(); }
    explicit operator bool() const { return owner_ != nullptr; }
    void release();

   private:
    friend class WatchLimiter;
    Slot(WatchLimiter* owner, std::string key) : owner_(owner), key_(std::move(key)) {}
    WatchLimiter* owner_ = nullptr;
    std::string key_;
  };

  // `client` identifies who counts: the authenticated user when there is one,
  // else the client's address. An empty Slot means over a bound.
  Slot tryAcquire(const std::string& client);

  bool limited() const { return max_per_client_ > 0 || max_total_ > 0; }
  size_t open() const;
  size_t openFor(const std::string& client) const;

 private:
  void release(const std::string& client);

  const size_t max_per_client_;
  const size_t max_total_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, size_t> per_client_;  // only clients with open watches
  size_t total_ = 0;
};

}  // namespace proxy
