// Waits for the cache's state, woken by ChangeSignals (cache/change_signal.h) rather than
// polled: RV=N reads and watches, freshness probes, read-your-writes and caches starting.
#include <atomic>
#include <memory>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include "proxy/http/client_watch.h"
#include "proxy/passthrough/write_sync.h"
#include "proxy/reads/cache_serving.h"

namespace proxy::io {

asio::awaitable<bool> awaitChange(const cache::Clock& clock, const std::function<bool()>& done,
                                  const std::function<ChangeSignals()>& signals, cache::Clock::TimePoint deadline,
                                  WaitingClient* client) {
  const auto executor = co_await asio::this_coro::executor;
  // Shared with the wake-ups, which run on the notifying thread and post to this one: the
  // timer is only ever touched here. `woken` covers a notification that lands between the
  // re-check and the wait (its posted cancel then finds the wait armed, since this
  // coroutine holds the io thread until it suspends).
  auto timer = std::make_shared<asio::steady_timer>(executor);
  auto woken = std::make_shared<std::atomic<bool>>(false);
  auto gone = std::make_shared<bool>(false);  // set on this io thread by the client watch
  std::shared_ptr<ClientWatch> watching;
  bool result = false;
  while (true) {
    woken->store(false, std::memory_order_relaxed);
    std::vector<cache::ChangeSignal::Subscription> subscriptions;
    for (const cache::ChangeSignal* signal : signals()) {
      if (!signal) continue;
      subscriptions.push_back(signal->subscribe([timer, woken, executor] {
        woken->store(true, std::memory_order_relaxed);
        asio::post(executor, [timer] { timer->cancel(); });
      }));
    }
    if (done()) {  // after subscribing: a change in between is not missed
      result = true;
      break;
    }
    if (*gone || clock.now() >= deadline) break;
    if (woken->load(std::memory_order_relaxed)) continue;
    if (client && client->out && !watching) {
      watching = client->out->watchClient([timer, gone] {
        *gone = true;
        timer->cancel();
      });
    }
    timer->expires_at(deadline);
    error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  if (watching) co_await client->out->endClientWatch(*watching);
  if (*gone) client->gone = true;
  co_return result;
}

asio::awaitable<bool> awaitChange(const cache::Clock& clock, const std::function<bool()>& done,
                                  const cache::ChangeSignal& signal, cache::Clock::TimePoint deadline,
                                  WaitingClient* client) {
  const std::function<ChangeSignals()> signals = [&signal] { return ChangeSignals{&signal}; };
  co_return co_await awaitChange(clock, done, signals, deadline, client);
}

asio::awaitable<bool> awaitResourceVersion(const cache::Clock& clock, const cache::ThreadSafeStore& store, uint64_t rv,
                                           cache::Clock::TimePoint deadline, WaitingClient* client) {
  const std::function<bool()> reached = [&store, rv] { return store.currentRV() >= rv; };
  co_return co_await awaitChange(clock, reached, store.changes(), deadline, client);
}

asio::awaitable<bool> awaitCacheShows(const cache::Clock& clock, const WriteExpectation& expected,
                                      const cache::ThreadSafeStore& store, cache::Clock::TimePoint deadline,
                                      WaitingClient* client) {
  const std::function<bool()> shown = [&expected, &store] { return satisfiedBy(expected, store); };
  co_return co_await awaitChange(clock, shown, store.changes(), deadline, client);
}

}  // namespace proxy::io
