// After a 101 (exec, attach, port-forward): the connection becomes a byte pipe between
// the client and the upstream (proxy/passthrough/upgrade_splice.h).
#include "proxy/passthrough/upgrade_splice.h"

#include <memory>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

// Copies upstream -> client until either side fails or closes.
asio::awaitable<void> pumpToClient(UpstreamConnectionPtr conn, DownstreamStream& client, size_t buffer_bytes) {
  std::vector<char> buf(buffer_bytes);
  error_code ec;
  while (true) {
    size_t n = co_await conn->visit(
        [&](auto& s) { return s.async_read_some(asio::buffer(buf), redirect_error(use_awaitable, ec)); });
    if (n > 0) co_await asio::async_write(client, asio::buffer(buf.data(), n), redirect_error(use_awaitable, ec));
    if (ec) break;
  }
}

// Copies client -> upstream until either side fails or closes.
asio::awaitable<void> pumpToUpstream(UpstreamConnectionPtr conn, DownstreamStream& client, size_t buffer_bytes) {
  std::vector<char> buf(buffer_bytes);
  error_code ec;
  while (true) {
    size_t n = co_await client.async_read_some(asio::buffer(buf), redirect_error(use_awaitable, ec));
    if (n > 0) {
      error_code wec;
      co_await conn->visit(
          [&](auto& s) { return asio::async_write(s, asio::buffer(buf.data(), n), redirect_error(use_awaitable, wec)); });
      if (wec) break;
    }
    if (ec) break;
  }
}

}  // namespace

asio::awaitable<void> spliceUpgraded(UpgradableConnection& client, UpstreamConnectionPtr conn,
                                     const ServerOptions& options) {
  DownstreamStream& stream = client.connection();
  beast::flat_buffer& read_ahead = client.readAhead();
  error_code ec;
  stream.expires_never();
  if (conn->buffer.size() > 0) {
    co_await asio::async_write(stream, conn->buffer.data(), redirect_error(use_awaitable, ec));
    conn->buffer.consume(conn->buffer.size());
  }
  if (!ec && read_ahead.size() > 0) {
    co_await conn->visit([&](auto& s) { return asio::async_write(s, read_ahead.data(), redirect_error(use_awaitable, ec)); });
    read_ahead.consume(read_ahead.size());
  }
  if (ec) co_return;

  auto executor = co_await asio::this_coro::executor;
  auto upward_done = std::make_shared<asio::steady_timer>(executor, std::chrono::steady_clock::time_point::max());
  auto upward_finished = std::make_shared<bool>(false);
  asio::co_spawn(executor, pumpToUpstream(conn, stream, options.stream_buffer_bytes),
                 [conn, &stream, upward_done, upward_finished](std::exception_ptr) {
                   *upward_finished = true;
                   error_code ignored;
                   conn->close();
                   stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
                   upward_done->cancel();
                 });
  co_await pumpToClient(conn, stream, options.stream_buffer_bytes);
  conn->close();
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  if (!*upward_finished) co_await upward_done->async_wait(redirect_error(use_awaitable, ec));
}

}  // namespace proxy::io
