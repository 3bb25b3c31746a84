#pragma once
// One request's way through the proxy, whatever protocol carried it (HTTP/1.1, an HTTP/2
// stream, a WebSocket handshake): the kubectl-proxy request filter, the in-flight bounds,
// gateway admission, then a local endpoint, the cache or the upstream; counted and logged
// once answered. The protocol's own loop (session.cpp, http2/) parses the Request and
// gives the ServerStream the answer goes to.

#include <chrono>

#include "proxy/asio_beast.h"
#include "proxy/forward_outcome.h"
#include "proxy/request.h"
#include "proxy/server/server_context.h"
#include "proxy/stream.h"

namespace proxy::io {

// Answers `req` on `out` for the connection `session` (its client certificate, its
// shutdown hold) and returns how it went. `arrived` is when its head was read.
asio::awaitable<ForwardOutcome> handleRequest(ServerContext& server, Worker& worker, Session& session, Request& req,
                                              ServerStream& out, std::chrono::steady_clock::time_point arrived);

}  // namespace proxy::io
