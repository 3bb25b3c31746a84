#pragma once
// One client connection served by one coroutine (proxy/session.cpp): read a request head,
// route it (a refusal, a local endpoint, the cache or the upstream), answer, and repeat
// while the connection is kept alive. After a 101 the connection is a byte pipe instead.

#include "proxy/asio_beast.h"
#include "proxy/downstream_request.h"
#include "proxy/server_context.h"
#include "proxy/server_options.h"
#include "proxy/upstream_connection.h"

namespace proxy::io {

// Serves `session` on `worker`'s io thread until the connection ends, then closes it
// and tells `server` (ServerContext::sessionEnded).
asio::awaitable<void> runSession(ServerContext& server, SessionPtr session, Worker& worker);

// After a 101: relays bytes both ways until either side closes, then closes
// both (like Go's ReverseProxy). Bytes already buffered past the two message
// heads go first.
asio::awaitable<void> spliceUpgraded(DownstreamRequest& req, UpstreamConnectionPtr conn, const ServerOptions& options);

}  // namespace proxy::io
