#include "proxy/server/flow_limiter.h"

#include <algorithm>

namespace proxy {

FlowLimiter::Seat& FlowLimiter::Seat::operator=(Seat&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    flow_ = std::move(other.flow_);
  }
  return *this;
}

void FlowLimiter::Seat::release() {
  if (owner_ == nullptr) return;
  std::exchange(owner_, nullptr)->release(flow_);
}

FlowLimiter::Ticket& FlowLimiter::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    leave();
    owner_ = std::exchange(other.owner_, nullptr);
    waiter_ = std::move(other.waiter_);
  }
  return *this;
}

FlowLimiter::Seat FlowLimiter::Ticket::take() {
  if (!waiter_) return {};
  std::lock_guard lock(owner_->mu_);
  if (!waiter_->has_seat) return {};
  waiter_->has_seat = false;
  waiter_->left = true;
  return Seat(owner_, waiter_->flow);
}

void FlowLimiter::Ticket::leave() {
  if (!waiter_) return;
  std::shared_ptr<Waiter> waiter = std::move(waiter_);
  bool seat_left_behind = false;
  {
    std::lock_guard lock(owner_->mu_);
    if (waiter->left) return;
    waiter->left = true;
    seat_left_behind = std::exchange(waiter->has_seat, false);
    if (!seat_left_behind) {
      FlowState& state = owner_->flows_[waiter->flow];
      std::erase(state.queue, waiter);
      --owner_->waiting_;
      owner_->forget(waiter->flow);
    }
  }
  // A seat granted to a ticket that no longer wants it goes to the next in line.
  if (seat_left_behind) owner_->release(waiter->flow);
}

bool FlowLimiter::admissible(const FlowState* state) const {
  const size_t mine = state ? state->held : 0;
  if (bounds_.per_flow > 0 && mine >= bounds_.per_flow) return false;
  if (bounds_.seats == 0) return true;
  if (held_ >= bounds_.seats) return false;
  const size_t flows = flows_.size() + (state ? 0 : 1);
  const size_t share = std::max<size_t>(1, bounds_.seats / flows);
  // Alone, a flow only borrows: the reserve waits for whoever comes next.
  if (flows > 1 && mine < share) return true;
  return bounds_.seats - held_ > bounds_.reserve;
}

void FlowLimiter::take(const std::string& flow) {
  ++flows_[flow].held;
  ++held_;
}

void FlowLimiter::forget(const std::string& flow) {
  auto it = flows_.find(flow);
  if (it != flows_.end() && it->second.held == 0 && it->second.queue.empty()) flows_.erase(it);
}

FlowLimiter::Seat FlowLimiter::tryAcquire(const std::string& flow) {
  if (!limited()) return Seat(this, flow);
  std::lock_guard lock(mu_);
  auto it = flows_.find(flow);
  if (!admissible(it == flows_.end() ? nullptr : &it->second)) return {};
  take(flow);
  return Seat(this, flow);
}

FlowLimiter::Ticket FlowLimiter::acquireOrQueue(const std::string& flow, Seat& seat, std::function<void()> granted) {
  if (!limited()) {
    seat = Seat(this, flow);
    return {};
  }
  std::lock_guard lock(mu_);
  auto it = flows_.find(flow);
  if (admissible(it == flows_.end() ? nullptr : &it->second)) {
    take(flow);
    seat = Seat(this, flow);
    return {};
  }
  if (bounds_.queue_per_flow == 0 || (it != flows_.end() && it->second.queue.size() >= bounds_.queue_per_flow)) {
    return {};
  }
  auto waiter = std::make_shared<Waiter>();
  waiter->flow = flow;
  waiter->order = next_order_++;
  waiter->granted = std::move(granted);
  flows_[flow].queue.push_back(waiter);
  ++waiting_;
  return Ticket(this, std::move(waiter));
}

void FlowLimiter::release(const std::string& flow) {
  if (!limited()) return;
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard lock(mu_);
    auto it = flows_.find(flow);
    if (it != flows_.end() && it->second.held > 0) --it->second.held;
    --held_;
    forget(flow);
    wake = grantWaiting();
  }
  for (auto& granted : wake) granted();
}

std::vector<std::function<void()>> FlowLimiter::grantWaiting() {
  std::vector<std::function<void()>> wake;
  while (waiting_ > 0) {
    // The waiting flow holding the fewest seats, the longest waiting among equals.
    FlowState* chosen = nullptr;
    const std::string* chosen_flow = nullptr;
    for (auto& [flow, state] : flows_) {
      if (state.queue.empty() || !admissible(&state)) continue;
      if (!chosen || state.held < chosen->held ||
          (state.held == chosen->held && state.queue.front()->order < chosen->queue.front()->order)) {
        chosen = &state;
        chosen_flow = &flow;
      }
    }
    if (!chosen) break;
    std::shared_ptr<Waiter> waiter = chosen->queue.front();
    chosen->queue.pop_front();
    --waiting_;
    waiter->has_seat = true;
    take(*chosen_flow);
    wake.push_back(std::move(waiter->granted));
  }
  return wake;
}

size_t FlowLimiter::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

size_t FlowLimiter::heldBy(const std::string& flow) const {
  std::lock_guard lock(mu_);
  auto it = flows_.find(flow);
  return it == flows_.end() ? 0 : it->second.held;
}

size_t FlowLimiter::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

}  // namespace proxy
