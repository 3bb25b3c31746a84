#pragma once
// The one header that includes Asio and Beast for the proxy's event-loop code: the io
// headers (downstream_stream.h, upstream_connection.h, upstream.h, upstream_pool.h,
// raw_parser.h, stream.h, passthrough.h, cache_serving.h) build on it, and
// so do the translation units that serve connections (proxy_server.cpp, passthrough.cpp,
// upstream_pool.cpp, cached_read.cpp, cached_watch.cpp, freshness_probe.cpp,
// upgrade_splice.cpp, http2_session.cpp, http2_stream.cpp). Each such
// translation unit costs tens of seconds to compile: public headers and plain code
// forward-declare instead, and never include this.
//
// Threading model: one io_context per io thread. A downstream connection, every
// coroutine serving it, and every upstream connection it uses live on that one
// thread, so nothing here needs a lock or a strand. Only `Upstream` (shared,
// immutable after construction apart from the token source) crosses threads.

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace proxy::io {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

}  // namespace proxy::io
