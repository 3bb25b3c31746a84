#pragma once
// ReviewFlights: concurrent identical reviews share one upstream request. When many
// clients present the same token at once (a Deployment's replicas restarting with one
// service account), the first request asks the apiserver and the others wait for its
// answer instead of sending their own TokenReview or SubjectAccessReview. The decision
// cache remembers answers; this covers the time until the first one arrives.
//
// Waiters may run on any io thread: each parks on a timer of its own executor, and the
// request that flew wakes them by posting to those executors. The result is stored before
// the flight is removed, so a later request finds it in the decision cache (when it was
// definitive) or starts a new flight.
//
// Only proxy_server.cpp includes this (it needs Asio).

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace proxy::auth {

template <class Value>
class ReviewFlights {
 public:
  // The value `fetch()` (an awaitable<Value>) returns for `key`, run once for all callers
  // that arrive while it is in flight. `shared` tells whether this caller waited for
  // another's request. Waiters get `unanswered` when the request threw or never completed.
  template <class Fetch>
  boost::asio::awaitable<Value> run(const std::string& key, Fetch fetch, const Value& unanswered, bool& shared) {
    std::shared_ptr<Flight> flight;
    {
      std::lock_guard lock(mu_);
      auto& slot = flights_[key];
      shared = slot != nullptr;
      if (!slot) slot = std::make_shared<Flight>();
      flight = slot;
    }
    if (shared) co_return co_await wait(*flight, unanswered);
    Landing landing{*this, key, flight, unanswered};
    std::optional<Value> value;
    try {
      value = co_await fetch();
    } catch (...) {
      landing.land(unanswered, true);
      throw;
    }
    landing.land(*value, true);
    co_return std::move(*value);
  }

  // Flights in progress (for tests).
  size_t inFlight() const {
    std::lock_guard lock(mu_);
    return flights_.size();
  }

 private:
  struct Flight {
    std::mutex mu;
    std::optional<Value> result;  // guarded by mu
    std::vector<std::shared_ptr<boost::asio::steady_timer>> waiters;  // guarded by mu
  };

  // Ends a flight exactly once: with the fetched value (or `unanswered` when the fetch
  // threw), waking the waiters; or, when the fetching coroutine is destroyed while
  // suspended (its io_context is going away at shutdown, and so may the waiters'), with
  // `unanswered` and no post into executors that may be gone.
  struct Landing {
    ReviewFlights& flights;
    const std::string& key;
    std::shared_ptr<Flight> flight;
    const Value& unanswered;
    bool landed = false;

    void land(const Value& value, bool wake) {
      landed = true;
      {
        std::lock_guard lock(flights.mu_);
        flights.flights_.erase(key);
      }
      std::vector<std::shared_ptr<boost::asio::steady_timer>> waiters;
      {
        std::lock_guard lock(flight->mu);
        flight->result = value;
        waiters.swap(flight->waiters);
      }
      if (!wake) return;
      // A timer is cancelled on its own executor's thread.
      for (auto& timer : waiters) {
        auto executor = timer->get_executor();
        boost::asio::post(executor, [timer = std::move(timer)] { timer->cancel(); });
      }
    }
    ~Landing() {
      if (!landed) land(unanswered, false);
    }
  };

  boost::asio::awaitable<Value> wait(Flight& flight, const Value& unanswered) {
    auto timer = std::make_shared<boost::asio::steady_timer>(co_await boost::asio::this_coro::executor,
                                                             std::chrono::steady_clock::time_point::max());
    {
      std::lock_guard lock(flight.mu);
      if (flight.result) co_return *flight.result;
      flight.waiters.push_back(timer);
    }
    boost::system::error_code ec;
    co_await timer->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    std::lock_guard lock(flight.mu);
    co_return flight.result ? *flight.result : unanswered;
  }

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;  // guarded by mu_
};

}  // namespace proxy::auth
