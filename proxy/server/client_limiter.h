#pragma once
// Bounds what clients hold at once, per client and in total: watches (so that one client
// cannot exhaust the proxy's connections, memory and fan-out), connections (descriptors),
// requests in flight and reviews in flight (so that a flood cannot spend the proxy's
// upstream connections and its API priority-and-fairness share). Beyond a bound the
// caller answers as the apiserver's max-in-flight filter does (429 with Retry-After), or
// closes the connection.
//
// Shared by every io thread, hence the lock; it is taken once when a slot is taken and
// once when it is given back, never per event or byte. Without a per-client bound no
// per-client count is kept.

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace proxy {

class ClientLimiter {
 public:
  // 0 means unlimited, for each bound.
  ClientLimiter(size_t max_per_client, size_t max_total) : max_per_client_(max_per_client), max_total_(max_total) {}
  ClientLimiter(const ClientLimiter&) = delete;
  ClientLimiter& operator=(const ClientLimiter&) = delete;

  // A held slot; releases on destruction. Empty when refused.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept : owner_(other.owner_), key_(std::move(other.key_)) { other.owner_ = nullptr; }
    Slot& operator=(Slot&& other) noexcept;
    ~Slot() { release(); }
    explicit operator bool() const { return owner_ != nullptr; }
    void release();

   private:
    friend class ClientLimiter;
    Slot(ClientLimiter* owner, std::string key) : owner_(owner), key_(std::move(key)) {}
    ClientLimiter* owner_ = nullptr;
    std::string key_;
  };

  // `client` identifies who counts (for watches the authenticated user when there is
  // one, else the client's address). An empty Slot means over a bound.
  Slot tryAcquire(const std::string& client);

  bool limited() const { return max_per_client_ > 0 || max_total_ > 0; }
  size_t open() const;
  size_t openFor(const std::string& client) const;

 private:
  void release(const std::string& client);

  const size_t max_per_client_;
  const size_t max_total_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, size_t> per_client_;  // clients holding slots, with a per-client bound only
  size_t total_ = 0;
};

}  // namespace proxy
