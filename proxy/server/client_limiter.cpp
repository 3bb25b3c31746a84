#include "proxy/server/client_limiter.h"

namespace proxy {

ClientLimiter::Slot& ClientLimiter::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = other.owner_;
    key_ = std::move(other.key_);
    other.owner_ = nullptr;
  }
  return *this;
}

void ClientLimiter::Slot::release() {
  if (owner_ == nullptr) return;
  owner_->release(key_);
  owner_ = nullptr;
}

ClientLimiter::Slot ClientLimiter::tryAcquire(const std::string& client) {
  std::lock_guard lock(mu_);
  if (max_total_ > 0 && total_ >= max_total_) return {};
  if (max_per_client_ == 0) {
    ++total_;
    return Slot(this, "");
  }
  // Entries exist only while their count is positive, so a refusal below never
  // leaves a zero behind (max_per_client_ > 0 implies the entry existed).
  size_t& mine = per_client_[client];
  if (max_per_client_ > 0 && mine >= max_per_client_) return {};
  ++mine;
  ++total_;
  return Slot(this, client);
}

void ClientLimiter::release(const std::string& client) {
  std::lock_guard lock(mu_);
  --total_;
  if (max_per_client_ == 0) return;
  auto it = per_client_.find(client);
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
}

size_t ClientLimiter::open() const {
  std::lock_guard lock(mu_);
  return total_;
}

size_t ClientLimiter::openFor(const std::string& client) const {
  std::lock_guard lock(mu_);
  auto it = per_client_.find(client);
  return it == per_client_.end() ? 0 : it->second;
}

}  // namespace proxy
