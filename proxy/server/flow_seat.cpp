#include "proxy/server/flow_seat.h"

#include <atomic>
#include <memory>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include "proxy/http/client_watch.h"
#include "proxy/request.h"
#include "proxy/stream.h"

namespace proxy::io {

std::string flowOf(const Request& req) {
  if (!req.caller.empty()) return "user:" + req.caller;
  std::string flow = "client:" + req.client_ip;
  flow += ' ';
  flow += req.userAgent();
  return flow;
}

asio::awaitable<FlowLimiter::Seat> awaitSeat(FlowLimiter& limiter, const std::string& flow, ServerStream& out,
                                             std::chrono::milliseconds wait) {
  const auto executor = co_await asio::this_coro::executor;
  // The grant runs on the thread that gave a seat back and only posts the wake-up here;
  // the timer is only ever touched on this io thread.
  auto timer = std::make_shared<asio::steady_timer>(executor, wait);
  auto granted = std::make_shared<std::atomic<bool>>(false);
  FlowLimiter::Seat seat;
  FlowLimiter::Ticket ticket = limiter.acquireOrQueue(flow, seat, [timer, granted, executor] {
    granted->store(true, std::memory_order_relaxed);
    asio::post(executor, [timer] { timer->cancel(); });
  });
  if (seat || !ticket) co_return seat;
  std::shared_ptr<ClientWatch> client = out.watchClient([weak = std::weak_ptr<asio::steady_timer>(timer)] {
    if (auto t = weak.lock()) t->cancel();
  });
  // A grant that came between the queueing and here has posted its cancel already, which
  // runs once this coroutine suspends: the wait below then ends at once.
  error_code ec;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (client) {
    co_await out.endClientWatch(*client);
    // A seat granted meanwhile goes to the next in line as the Ticket is dropped.
    if (client->gone) co_return FlowLimiter::Seat{};
  }
  co_return ticket.take();
}

}  // namespace proxy::io
