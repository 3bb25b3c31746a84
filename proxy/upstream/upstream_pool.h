#pragma once
// UpstreamPool: the keep-alive connections to the upstream owned by one io thread, and
// callUpstream, the small requests the proxy makes on its own behalf over them.

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "cache/clock.h"
#include "proxy/asio_beast.h"
#include "proxy/http/header_filter.h"
#include "proxy/server/server_options.h"
#include "proxy/upstream/upstream.h"
#include "proxy/upstream/upstream_connection.h"
#include "proxy/upstream/upstream_failure.h"

namespace proxy::io {

// Not thread-safe: use only from coroutines running on `ctx`.
class UpstreamPool {
 public:
  UpstreamPool(Upstream& upstream, asio::io_context& ctx, const ServerOptions& options, const cache::Clock& clock);
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  Upstream& upstream() { return upstream_; }
  // An idle pooled connection when `allow_reuse` and one is alive, else a new one.
  // Throws UpstreamFailure.
  asio::awaitable<UpstreamConnectionPtr> acquire(bool allow_reuse, bool& reused);
  // Returns a connection whose last response was read completely.
  void release(UpstreamConnectionPtr conn);
  void closeAll();

 private:
  asio::awaitable<UpstreamConnectionPtr> connect();

  Upstream& upstream_;
  asio::io_context& ctx_;
  const cache::Clock& clock_;  // ages idle connections
  const size_t max_idle_;
  const std::chrono::milliseconds idle_timeout_;
  std::vector<UpstreamConnectionPtr> idle_;  // most recently used last
};

// A small request to the upstream with the proxy's own credentials (a review, a fence
// read): status, head fields and body, the body at most `max_body` bytes. Throws UpstreamFailure when
// the upstream cannot be reached or the exchange fails or exceeds `timeout`.
struct UpstreamReply {
  unsigned code = 0;
  HeaderList headers;
  std::string body;
};
asio::awaitable<UpstreamReply> callUpstream(UpstreamPool& pool, const std::string& method, const std::string& path,
                                            const std::string& body, std::chrono::milliseconds timeout,
                                            size_t max_body, const ServerOptions& options,
                                            const std::string& accept = "application/json");

}  // namespace proxy::io
