// Read-your-writes (--write-sync, docs/routing.md): a successful write's answer is held
// whole until the cache shows the write, then sent (with a Warning when the wait ran out).
#include <spdlog/spdlog.h>

#include "proxy/passthrough/exchange.h"
#include "proxy/passthrough/write_sync.h"
#include "proxy/reads/cache_serving.h"
#include "proxy/reads/read_route.h"
#include "watch/cached_resource.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

// Read-your-writes answers are held whole; a larger one (a deletecollection of many big
// objects) is relayed as usual instead, unheld.
constexpr size_t kMaxHeldBody = 16 << 20;

// Reads the response body into `body` until it ends or passes kMaxHeldBody. Returns
// false when the upstream failed mid-body.
asio::awaitable<bool> readHeldBody(UpstreamConnection& conn, UpstreamParser& rp, std::vector<char>& buf, std::string& body) {
  error_code ec;
  while (!rp.is_done() && body.size() <= kMaxHeldBody) {
    rp.setBodyBuffer(buf.data(), buf.size());
    co_await conn.visit([&](auto& s) { return http::async_read_some(s, conn.buffer, rp, redirect_error(use_awaitable, ec)); });
    if (ec == http::error::need_buffer) ec = {};
    body.append(buf.data(), rp.bodyUsed());
    // A body that ends with the connection completes the parser; anything else is cut short.
    if (ec) co_return rp.is_done();
  }
  co_return true;
}

// The held write's answer: waits for the cache (bounded), then sends the upstream's
// answer whole, with a Warning when the wait timed out.
asio::awaitable<ForwardOutcome> answerAfterCacheSync(Exchange& x, std::string body, const WriteSyncTarget& sync) {
  const watch::CachedResource& cached = *sync.cached;
  const std::string resource = cached.resource().displayName();
  ResponseHead head;
  head.status = x.rp->status;
  head.headers = filterResponseHeaders(x.rp->headers, false);
  if (const auto expected = expectationFor(x.req.info, sync.request_namespace, body)) {
    const auto start = cached.clock().now();
    WaitingClient client{&x.out};
    const bool shown =
        co_await awaitCacheShows(cached.clock(), *expected, cached.store(), start + sync.timeout, &client);
    if (client.gone) co_return ForwardOutcome{0, false};
    const double seconds = std::chrono::duration<double>(cached.clock().now() - start).count();
    sync.metrics.writeSyncWaited(resource, seconds, shown);
    if (!shown) {
      spdlog::warn("{} {}: the cache of {} did not show the write within {} ms", x.req.method, x.req.target, resource,
                   sync.timeout.count());
      head.headers.emplace_back("Warning", writeSyncTimeoutWarning(resource, sync.timeout));
    }
  } else {
    sync.metrics.writeSyncSkipped(resource);
  }
  head.headers.emplace_back(kServedByHeader, "upstream");
  co_await x.out.writeWhole(std::move(head), body);
  co_return ForwardOutcome{x.rp->status, false};
}

}  // namespace

asio::awaitable<std::optional<ForwardOutcome>> holdForCache(Exchange& x, const WriteSyncTarget& sync,
                                                            const ResponseFraming& framing, std::string& held) {
  const unsigned status = x.rp->status;
  if (status / 100 != 2 || framing.no_body || !findHeader(x.rp->headers, "Content-Encoding").empty()) {
    co_return std::nullopt;
  }
  const bool read = co_await readHeldBody(*x.conn, *x.rp, x.buf, held);
  if (!read) {  // the upstream failed mid-answer: like a truncated relay
    x.conn->close();
    x.control.active.reset();
    x.out.abort();
    co_return ForwardOutcome{status, false};
  }
  if (!x.rp->is_done()) co_return std::nullopt;
  // The upstream connection is done with before the wait, so nothing idles on it.
  x.releaseConnection();
  x.control.active.reset();
  co_return co_await answerAfterCacheSync(x, std::move(held), sync);
}

}  // namespace proxy::io
