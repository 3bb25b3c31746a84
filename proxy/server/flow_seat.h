#pragma once
// A request's seat among its flow's (proxy/server/flow_limiter.h), taken at once or after
// a brief wait in its flow's queue. The wait is woken by the seat's grant, not polled, and
// ends early when the client leaves (a closed connection, a reset stream).

#include <chrono>
#include <string>

#include "proxy/asio_beast.h"
#include "proxy/server/flow_limiter.h"

namespace proxy {
struct Request;
}

namespace proxy::io {

class ServerStream;

// How long a request may wait for a seat before its 429: the apiserver's own queues hold
// a request for a quarter of its timeout, but a proxy that serves from memory frees seats
// in microseconds, so a wait longer than this means the seats are held by someone slow.
inline constexpr std::chrono::milliseconds kSeatQueueWait{1000};

// Requests one flow may have waiting for seats: APF's default queue length limit.
inline constexpr size_t kSeatQueuePerFlow = 50;

// The flow a request counts against: the authenticated user in a gateway (APF's flow
// distinguisher for most flow schemas), else the client's address and User-Agent.
std::string flowOf(const Request& req);

// An empty seat when the flow's queue is full, the wait ran out or the client left.
asio::awaitable<FlowLimiter::Seat> awaitSeat(FlowLimiter& limiter, const std::string& flow, ServerStream& out,
                                             std::chrono::milliseconds wait);

}  // namespace proxy::io
