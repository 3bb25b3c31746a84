#pragma once
// FlowLimiter: seats for requests in flight, shared fairly between flows, in the spirit of
// the apiserver's API Priority and Fairness. A flow is who the request counts against: the
// authenticated user in a gateway, the client's address and User-Agent in a sidecar
// (APF's flow distinguisher is the user, too).
//
// The rule, chosen so that one flow that holds its seats for long (LISTs parked on a
// client's closed HTTP/2 window, a flood of slow pass-throughs) never pushes another out:
// - a flow holding less than its fair share (seats / flows holding or waiting for seats)
//   takes any free seat, once another flow holds or waits for seats;
// - a flow at or over its share borrows an idle seat only while more than `reserve` seats
//   stay free, so a newcomer always finds one;
// - `per_flow`, when set, caps what one flow holds whatever is idle.
// A refused request may wait for a seat (a Ticket); a seat given back goes to the waiting
// flow that holds the fewest seats (ties to the longest waiting), as APF's fair queuing
// serves the queue with the least work in progress. Waiting is bounded by the caller's
// deadline and by `queue_per_flow` tickets per flow; beyond either the caller answers with
// the apiserver's 429 and Retry-After.
//
// Shared by every io thread, hence the lock, taken once per seat taken or given back,
// never per byte or event. A Ticket's grant callback runs on the thread that gave the seat
// back, so it must only hand the wake-up over to its own executor.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace proxy {

struct FlowBounds {
  size_t seats = 0;           // 0: unlimited (no other bound applies)
  size_t reserve = 0;         // seats only flows under their fair share may take
  size_t per_flow = 0;        // 0: a flow may hold every seat the rules give it
  size_t queue_per_flow = 0;  // tickets a flow may have waiting; 0: never waits
};

class FlowLimiter {
  struct Waiter;

 public:
  explicit FlowLimiter(FlowBounds bounds) : bounds_(bounds) {}
  FlowLimiter(const FlowLimiter&) = delete;
  FlowLimiter& operator=(const FlowLimiter&) = delete;

  // A held seat; gives it back on destruction. Empty when refused.
  class Seat {
   public:
    Seat() = default;
    Seat(Seat&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)), flow_(std::move(other.flow_)) {}
    Seat& operator=(Seat&& other) noexcept;
    Seat(const Seat&) = delete;
    Seat& operator=(const Seat&) = delete;
    ~Seat() { release(); }
    explicit operator bool() const { return owner_ != nullptr; }
    void release();

   private:
    friend class FlowLimiter;
    Seat(FlowLimiter* owner, std::string flow) : owner_(owner), flow_(std::move(flow)) {}
    FlowLimiter* owner_ = nullptr;
    std::string flow_;
  };

  // A place in `flow`'s queue. take() gives the seat once granted (empty before); a Ticket
  // destroyed while waiting leaves the queue, and one destroyed after its grant but before
  // take() gives the seat back.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&&) noexcept = default;
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { leave(); }
    // False when the queue was full: the request is refused at once.
    explicit operator bool() const { return waiter_ != nullptr; }
    Seat take();

   private:
    friend class FlowLimiter;
    Ticket(FlowLimiter* owner, std::shared_ptr<Waiter> waiter) : owner_(owner), waiter_(std::move(waiter)) {}
    void leave();
    FlowLimiter* owner_ = nullptr;
    std::shared_ptr<Waiter> waiter_;
  };

  bool limited() const { return bounds_.seats > 0 || bounds_.per_flow > 0; }
  const FlowBounds& bounds() const { return bounds_; }

  // A seat now, or an empty Seat.
  Seat tryAcquire(const std::string& flow);
  // A seat now (`seat` set and an empty Ticket), or a place in the queue whose `granted`
  // runs once, on the releasing thread, when a seat is set aside for it. An empty Ticket
  // and no seat: refused (the flow's queue is full or it may not wait).
  Ticket acquireOrQueue(const std::string& flow, Seat& seat, std::function<void()> granted);

  size_t held() const;
  size_t heldBy(const std::string& flow) const;
  size_t waiting() const;

 private:
  struct Waiter {
    std::string flow;
    uint64_t order = 0;
    std::function<void()> granted;
    bool has_seat = false;  // granted, seat not yet taken; guarded by mu_
    bool left = false;      // guarded by mu_
  };
  struct FlowState {
    size_t held = 0;
    std::deque<std::shared_ptr<Waiter>> queue;
  };

  bool admissible(const FlowState* state) const;  // mu_ held: state null for a new flow
  void take(const std::string& flow);                                      // mu_ held
  void release(const std::string& flow);
  // Grants what seats allow to waiting flows; returns the callbacks to run unlocked.
  std::vector<std::function<void()>> grantWaiting();  // mu_ held
  void forget(const std::string& flow);                // mu_ held: drops an idle flow's entry

  const FlowBounds bounds_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, FlowState> flows_;  // flows holding or waiting; guarded by mu_
  size_t held_ = 0;                                   // guarded by mu_
  size_t waiting_ = 0;                                // guarded by mu_
  uint64_t next_order_ = 0;                           // guarded by mu_
};

}  // namespace proxy
