#pragma once
// Freshness: what the proxy knows about how current one cached resource is, beyond its
// store's RV (issue #15, docs/design.md "Freshness proofs").
//
// The store's RV moves only with the resource's own events and the upstream's bookmarks
// (about one a minute), while clients carry the cluster's revision, which every write to
// any resource moves. A probe (proxy/reads/freshness_probe.cpp) proves more:
// - a revision fence: a consistent upstream read answered at revision Q, taken after the
//   requests that wait on it arrived; Q is a real revision, at least as new as any write
//   those clients saw;
// - a state proof (S, Q): the store at RV S holds, within a scope (one namespace or all),
//   exactly the upstream's objects at revision Q (same keys, same RVs). Events in (S, Q]
//   for that scope, if any still arrive, can only be objects created and deleted again.
//
// FreshnessProofs remembers the latest state proof per scope; it is valid only while the
// store is still at S. ProbeFlights makes the requests waiting on one resource share one
// probe: a consistent read may only join a probe issued after it arrived (as the
// apiserver's consistent reads share an etcd progress request), a read at RV=N any probe.
//
// Thread-safe: io threads of any executor call every method.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cache/change_signal.h"
#include "cache/clock.h"

namespace watch {

struct Freshness {
  // Q: a revision the upstream answered at. The store's state (within the probe's scope)
  // is proven to be the upstream's state at Q when the store is at `state_rv` or beyond Q.
  uint64_t revision = 0;
  // S: the store RV whose state equals the upstream's at `revision` (a state proof), or 0
  // when only the fence is known (the store must reach `revision` by itself).
  uint64_t state_rv = 0;
};

// Scopes remembered at most (per resource); namespaces are named by clients.
inline constexpr size_t kMaxScopes = 1024;

class FreshnessProofs {
 public:
  // `clock` is borrowed and must outlive this.
  explicit FreshnessProofs(const cache::Clock& clock) : clock_(clock) {}
  FreshnessProofs(const FreshnessProofs&) = delete;
  FreshnessProofs& operator=(const FreshnessProofs&) = delete;

  // Remembers that the store at `proof.state_rv` holds the upstream's state at
  // `proof.revision` within namespace `scope` ("" = every namespace).
  void record(std::string_view scope, Freshness proof);
  // The newest revision proven for `scope` (a whole-resource proof covers every namespace)
  // while the store is still at `store_rv`; 0 when none.
  uint64_t provenAt(std::string_view scope, uint64_t store_rv) const;
  // True when the store has been at `store_rv` for at least `quiet` as far as these calls
  // saw (the first call for a resource counts as quiet): an idle resource, whose RV no
  // event will bring to a fence soon.
  bool quietFor(uint64_t store_rv, cache::Clock::Duration quiet);
  // A probe found the cache current (its state proven, or its RV at the fence) now.
  void noteProven();
  // When a probe last found the cache current; the epoch when never.
  cache::Clock::TimePoint lastProven() const;

 private:
  const cache::Clock& clock_;
  mutable std::mutex mu_;
  uint64_t seen_rv_ = 0;                   // guarded by mu_
  cache::Clock::TimePoint seen_since_{};  // guarded by mu_
  std::atomic<cache::Clock::Duration::rep> proven_at_{0};  // clock_.now().time_since_epoch() ticks
  std::map<std::string, Freshness, std::less<>> proofs_;  // guarded by mu_; scope -> latest
};

// One probe of one scope: the leader runs it and lands the result; the others (they may
// be on other io threads) wait for `landing()` to be notified, then read `result()`.
class ProbeFlight {
 public:
  using TimePoint = cache::Clock::TimePoint;
  bool issued() const { return issued_.load(std::memory_order_acquire); }
  bool landed() const { return landed_.load(std::memory_order_acquire); }
  TimePoint issuedAt() const { return issued_at_; }
  // Valid once landed(); nullopt when the probe failed (the requests pass through).
  const std::optional<Freshness>& result() const { return result_; }
  // Notified once, when the probe lands.
  const cache::ChangeSignal& landing() const { return landing_; }

 private:
  friend class ProbeFlights;
  std::atomic<bool> issued_{false};
  std::atomic<bool> landed_{false};
  TimePoint issued_at_{};  // written before issued_ is set
  std::optional<Freshness> result_;  // written before landed_ is set
  cache::ChangeSignal landing_;
};
using ProbeFlightPtr = std::shared_ptr<ProbeFlight>;

class ProbeFlights {
 public:
  using TimePoint = cache::Clock::TimePoint;
  // `clock` is borrowed and must outlive this.
  explicit ProbeFlights(const cache::Clock& clock) : clock_(clock) {}
  ProbeFlights(const ProbeFlights&) = delete;
  ProbeFlights& operator=(const ProbeFlights&) = delete;

  struct Seat {
    ProbeFlightPtr flight;  // null: the probe in flight is too old for this request; wait for it to land
    bool leader = false;    // this request runs the probe
  };
  // A seat on the next probe of `scope` that answers a request which arrived at `arrived`
  // (a consistent read needs a probe issued after that; nullopt: any probe will do).
  Seat join(const std::string& scope, std::optional<TimePoint> arrived);
  // The probe in flight for `scope`, if any (to wait for it to land).
  ProbeFlightPtr current(const std::string& scope) const;
  // The leader: the probe leaves now (requests arriving from here on need the next one).
  void issue(const ProbeFlightPtr& flight);
  // The leader: the probe's answer; the scope is free for the next probe.
  void land(const std::string& scope, const ProbeFlightPtr& flight, std::optional<Freshness> result);

 private:
  const cache::Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, ProbeFlightPtr> flights_;                 // guarded by mu_; scope -> in flight
};

}  // namespace watch
