#pragma once
// One client connection served by one coroutine (proxy/server/session.cpp): read a request head,
// route it (a refusal, a local endpoint, the cache or the upstream), answer, and repeat
// while the connection is kept alive; an HTTP/2 connection is served by proxy/http2/http2_session.h.

#include "proxy/asio_beast.h"
#include "proxy/request.h"
#include "proxy/server/server_context.h"
#include "proxy/server/server_options.h"
#include "proxy/upstream/upstream_connection.h"

namespace proxy::io {

// Serves `session` on `worker`'s io thread until the connection ends, then closes it
// and tells `server` (ServerContext::sessionEnded).
asio::awaitable<void> runSession(ServerContext& server, SessionPtr session, Worker& worker);

}  // namespace proxy::io
