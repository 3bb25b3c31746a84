#include "watch/freshness.h"

namespace watch {

void FreshnessProofs::record(std::string_view scope, Freshness proof) {
  std::lock_guard lock(mu_);
  auto it = proofs_.find(scope);
  if (it == proofs_.end()) {
    // Scopes are namespaces clients name: bounded, since a proof is only a shortcut.
    if (proofs_.size() >= kMaxScopes) proofs_.clear();
    proofs_.emplace(std::string(scope), proof);
    return;
  }
  // A newer store state, or the same state proven at a newer revision.
  if (proof.state_rv > it->second.state_rv ||
      (proof.state_rv == it->second.state_rv && proof.revision > it->second.revision)) {
    it->second = proof;
  }
}

uint64_t FreshnessProofs::provenAt(std::string_view scope, uint64_t store_rv) const {
  std::lock_guard lock(mu_);
  uint64_t best = 0;
  auto consider = [&](std::string_view key) {
    auto it = proofs_.find(key);
    if (it != proofs_.end() && it->second.state_rv == store_rv) best = std::max(best, it->second.revision);
  };
  consider(scope);
  if (!scope.empty()) consider("");
  return best;
}

void FreshnessProofs::noteProven() {
  proven_at_.store(clock_.now().time_since_epoch().count(), std::memory_order_relaxed);
}

cache::Clock::TimePoint FreshnessProofs::lastProven() const {
  return cache::Clock::TimePoint(cache::Clock::Duration(proven_at_.load(std::memory_order_relaxed)));
}

bool FreshnessProofs::quietFor(uint64_t store_rv, cache::Clock::Duration quiet) {
  const auto now = clock_.now();
  std::lock_guard lock(mu_);
  if (seen_rv_ == 0) {
    seen_rv_ = store_rv;
    seen_since_ = now - quiet;
  } else if (seen_rv_ != store_rv) {
    seen_rv_ = store_rv;
    seen_since_ = now;
  }
  return now - seen_since_ >= quiet;
}

ProbeFlights::Seat ProbeFlights::join(const std::string& scope, std::optional<TimePoint> arrived) {
  std::lock_guard lock(mu_);
  auto& slot = flights_[scope];
  if (!slot) {
    slot = std::make_shared<ProbeFlight>();
    return {slot, true};
  }
  // Not yet issued: whatever it reads is read after this request arrived.
  if (!slot->issued() || !arrived || slot->issuedAt() >= *arrived) return {slot, false};
  return {nullptr, false};
}

ProbeFlightPtr ProbeFlights::current(const std::string& scope) const {
  std::lock_guard lock(mu_);
  auto it = flights_.find(scope);
  return it == flights_.end() ? nullptr : it->second;
}

void ProbeFlights::issue(const ProbeFlightPtr& flight) {
  std::lock_guard lock(mu_);
  flight->issued_at_ = clock_.now();
  flight->issued_.store(true, std::memory_order_release);
}

void ProbeFlights::land(const std::string& scope, const ProbeFlightPtr& flight, std::optional<Freshness> result) {
  {
    std::lock_guard lock(mu_);
    flight->result_ = result;
    flight->landed_.store(true, std::memory_order_release);
    auto it = flights_.find(scope);
    if (it != flights_.end() && it->second == flight) flights_.erase(it);
  }
  flight->landing_.notify();  // outside the lock: the waiters' callbacks post their wake-ups
}


}  // namespace watch
