#pragma once
// Pass-through: transparent forwarding of one client request to the upstream apiserver
// (proxy/passthrough.cpp).

#include "proxy/asio_beast.h"
#include "proxy/downstream_request.h"
#include "proxy/forward_outcome.h"
#include "proxy/server_options.h"
#include "proxy/session_control.h"
#include "proxy/upstream_pool.h"
#include "proxy/write_sync.h"

namespace proxy::io {

// Forwards one request to the upstream and relays the answer (or answers a
// Status when the upstream cannot be reached, at once while it is known down).
asio::awaitable<ForwardOutcome> forwardToUpstream(DownstreamRequest& req, UpstreamPool& pool, SessionControl& control,
                                                  const ServerOptions& options, const WriteSyncTarget* sync = nullptr);

}  // namespace proxy::io
