#pragma once
// ClientWatch: watches the client socket while a long-running response streams (a
// pass-through watch or exec, a cached watch), so that the stream ends as soon as its
// client goes away rather than at its next event. A client sends nothing while it waits
// for a response, so an EOF or error means it is gone (Go's net/http cancels the request
// on the same signal). Bytes that do arrive (a pipelined request) stay in the session's
// buffer for the next parse. Lives on the stream's io thread.

#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include <boost/asio/steady_timer.hpp>

#include "proxy/asio_beast.h"
#include "proxy/http/downstream_stream.h"

namespace proxy::io {

struct ClientWatch {
  bool gone = false;
  bool finished = false;
  std::shared_ptr<asio::steady_timer> done;  // cancelled when the watch ends
};

namespace detail {
inline asio::awaitable<void> readUntilClientLeaves(DownstreamStream& stream, beast::flat_buffer& buffer,
                                                   std::shared_ptr<ClientWatch> watch, std::function<void()> on_gone) {
  error_code ec;
  // Untimed: the timeouts of the TCP layer belong to the response's writes.
  const size_t n = co_await stream.async_read_some_untimed(buffer.prepare(4096), asio::redirect_error(asio::use_awaitable, ec));
  buffer.commit(n);
  if (ec && ec != asio::error::operation_aborted) {
    watch->gone = true;
    on_gone();
  }
}
}  // namespace detail

// Starts watching the client of `stream`; `on_gone` runs on the io thread when it leaves.
// endClientWatch must complete before `stream` or `buffer` goes away. A plain function,
// not a coroutine: as a coroutine taking the std::function by value, built with GCC 12
// from a lambda at the call site, it freed the upstream connection the lambda held while
// the pool still kept it (suspected double destruction of the converted argument).
inline std::shared_ptr<ClientWatch> startClientWatch(DownstreamStream& stream, beast::flat_buffer& buffer,
                                                     std::function<void()> on_gone) {
  auto watch = std::make_shared<ClientWatch>();
  auto executor = stream.get_executor();
  watch->done = std::make_shared<asio::steady_timer>(executor, std::chrono::steady_clock::time_point::max());
  asio::co_spawn(executor, detail::readUntilClientLeaves(stream, buffer, watch, std::move(on_gone)),
                 [watch](std::exception_ptr) {
                   watch->finished = true;
                   watch->done->cancel();
                 });
  return watch;
}

// The watch reads the client socket and the session's buffer, so it must be over before
// the request's frame (and maybe the session) goes away.
inline asio::awaitable<void> endClientWatch(ClientWatch& watch, DownstreamStream& stream) {
  if (watch.finished) co_return;
  error_code ignored;
  stream.cancelReads();
  co_await watch.done->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

}  // namespace proxy::io
