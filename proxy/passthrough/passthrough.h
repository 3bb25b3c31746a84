#pragma once
// Pass-through: transparent forwarding of one client request to the upstream apiserver
// (proxy/passthrough/passthrough.cpp), whatever protocol the client speaks.

#include "proxy/asio_beast.h"
#include "proxy/forward_outcome.h"
#include "proxy/request.h"
#include "proxy/server/server_options.h"
#include "proxy/stream.h"
#include "proxy/upstream/upstream_pool.h"
#include "proxy/passthrough/write_sync.h"

namespace proxy::io {

// Forwards `req` to the upstream and relays the answer to `out` (or answers a Status
// when the upstream cannot be reached, at once while it is known down). `sync`: a write
// whose answer waits for the cache to show it (--write-sync).
asio::awaitable<ForwardOutcome> forwardToUpstream(const Request& req, ServerStream& out, UpstreamPool& pool,
                                                  const ServerOptions& options, const WriteSyncTarget* sync = nullptr);

}  // namespace proxy::io
