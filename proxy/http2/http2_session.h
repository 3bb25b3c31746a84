#pragma once
// HTTP/2 downstream (issue 18): one connection's frames with libnghttp2
// (proxy/http2/http2_connection.h), each stream's request made from its HEADERS and
// answered by handleRequest through an Http2Stream (proxy/http2/http2_stream.h), with no
// HTTP/1.1 text on the way. Settings as kube-apiserver's (Go's http2.Server as the
// apiserver configures it): 100 concurrent streams, a 256 KiB receive window and frame
// size per stream, 100 x 256 KiB for the connection. A stream whose client stops reading
// holds at most its send buffer and stalls only itself.

#include <string>

#include "proxy/asio_beast.h"
#include "proxy/server/server_context.h"

namespace proxy::io {

// True when the connection's TLS handshake chose "h2" by ALPN.
bool negotiatedHttp2(DownstreamStream& stream);

enum class Http2Preface { Present, Absent, Closed, TimedOut };
// Reads from a plain connection until its first bytes either are HTTP/2's connection
// preface (Present: the client speaks h2c by prior knowledge) or cannot be (Absent: the
// bytes stay in `buffer` for the HTTP/1.1 reader). Closed: the client left; TimedOut: no
// request head began within `timeout` (the read-header timeout). Both end the connection
// without an answer, as Go's server ends it.
asio::awaitable<Http2Preface> readHttp2Preface(DownstreamStream& stream, beast::flat_buffer& buffer,
                                               std::chrono::milliseconds timeout);

// Serves `connection` as HTTP/2 until the client or the server ends it; every stream's
// request has ended when this returns. Bytes already in the connection's buffer are the
// first ones of the connection.
asio::awaitable<void> serveHttp2(ServerContext& server, Worker& worker, Session& connection,
                                 const std::string& client_ip);

}  // namespace proxy::io
