#pragma once
// spliceUpgraded: after a 101 the client connection is a byte pipe to the upstream.

#include "proxy/asio_beast.h"
#include "proxy/http/http1_stream.h"
#include "proxy/server/server_options.h"
#include "proxy/upstream/upstream_connection.h"

namespace proxy::io {

// After a 101: relays bytes both ways until either side closes, then closes
// both (like Go's ReverseProxy). Bytes already buffered past the two message
// heads go first.
asio::awaitable<void> spliceUpgraded(UpgradableConnection& client, UpstreamConnectionPtr conn,
                                     const ServerOptions& options);

}  // namespace proxy::io
