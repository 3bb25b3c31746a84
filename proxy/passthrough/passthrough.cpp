// Transparent forwarding of one client request to the upstream apiserver: request head
// and body out, response head and body back, both streamed through a fixed-size buffer,
// plus the byte splice after a 101 Switching Protocols. The client side is a ServerStream,
// so an HTTP/2 client's request goes up as HTTP/1.1 without this code knowing.
#include "proxy/passthrough/passthrough.h"

#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "proxy/answers.h"
#include "proxy/http/chunk_framing.h"
#include "proxy/http/client_watch.h"
#include "proxy/observability/proxy_metrics.h"
#include "proxy/passthrough/exchange.h"
#include "proxy/passthrough/upgrade_splice.h"
#include "proxy/reads/read_route.h"
#include "proxy/server/routing.h"
#include "proxy/server/session_control.h"
#include "watch/upstream_health.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

bool isEndOfStream(const error_code& ec) {
  return ec == asio::error::eof || ec == http::error::end_of_stream || ec == asio::ssl::error::stream_truncated;
}

// Beast sizes each socket read by the flat_buffer's spare capacity (at least 512 bytes).
// A relay consumes everything it reads, so without a reservation every read stays at 512
// bytes: 39k reads for 20 MB, 30x slower than direct.
void reserveReadSize(beast::flat_buffer& buffer, size_t bytes) {
  if (buffer.capacity() < bytes) buffer.reserve(bytes);
}

asio::awaitable<ForwardOutcome> answerIoFailure(Exchange& x, const error_code& ec) {
  // Named, not a braced temporary in the co_await: GCC 12 destroys such a temporary twice.
  const UpstreamFailure failure{Reason::ServiceUnavailable, "io", x.upstream.reachError(ec.message())};
  co_return co_await answerFailure(x, failure);
}

// While the upstream is known down (watch/upstream_health.h), requests the cache cannot
// answer fail at once instead of each waiting for its own connect timeout. The request
// body is not read, so the connection closes when there was one.
asio::awaitable<ForwardOutcome> answerUnavailable(Exchange& x, const watch::UpstreamHealth& health) {
  x.upstream.metrics().upstreamFailedFast();
  Status status{Reason::ServiceUnavailable,
                x.upstream.reachError(fmt::format("the upstream has been unreachable for {:.0f}s ({}); retry later",
                                                  health.downSeconds(), health.lastError())),
                1};
  spdlog::debug("{} {}: {}", x.req.method, x.req.target, status.message);
  co_return co_await answerInsteadOfUpstream(x, status);
}

// 413 as the apiserver words it (errors.NewRequestEntityTooLargeError); the rest of the
// body is refused as the protocol refuses it (ServerStream::refuseRequestBody).
asio::awaitable<ForwardOutcome> refuseLargeBody(Exchange& x) {
  spdlog::debug("{} {} from {}: body larger than {} bytes", x.req.method, x.req.target, x.req.client_ip,
                x.options.max_request_body_bytes);
  const Status status{Reason::RequestEntityTooLarge,
                      fmt::format("Request entity too large: limit is {}", x.options.max_request_body_bytes)};
  const unsigned code = co_await writeStatus(x.out, x.req, status);
  co_await x.out.refuseRequestBody();
  co_return ForwardOutcome{code, false};
}

struct StreamGauge {
  StreamGauge(ProxyMetrics& m, bool active) : metrics(m), on(active) {
    if (on) metrics.streamOpened();
  }
  ~StreamGauge() {
    if (on) metrics.streamClosed();
  }
  ProxyMetrics& metrics;
  bool on;
};

RequestFraming requestFraming(const Request& req, ServerStream& out, const ServerOptions& options) {
  RequestFraming in;
  in.has_body = out.requestBodyPending();
  if (auto length = out.requestBodyLength()) {
    in.framing = BodyFraming::ContentLength;
    in.length = *length;
  } else if (in.has_body) {
    in.framing = BodyFraming::Chunked;
  }
  in.upgrade = isUpgradeRequest(req.headers) && out.upgradable();
  in.body_limit = in.has_body && !in.upgrade && bodyIsLimited(req.info) ? options.max_request_body_bytes : 0;
  return in;
}

// The request body, client to upstream. nullopt once it is all sent; otherwise the
// request ended here (the client left, the body was too large, the upstream failed).
asio::awaitable<std::optional<ForwardOutcome>> sendRequestBody(Exchange& x) {
  const bool chunked = x.in.framing == BodyFraming::Chunked;
  uint64_t body_bytes = 0;
  while (true) {
    size_t n = 0;
    try {
      n = co_await x.out.readRequestBody(x.buf.data(), x.buf.size());
    } catch (const std::exception&) {
      x.conn->close();  // the client went away mid-body: nobody to answer
      co_return ForwardOutcome{0, false};
    }
    if (n == 0) break;
    body_bytes += n;
    if (x.in.body_limit > 0 && body_bytes > x.in.body_limit) {  // a chunked body: its size shows only now
      x.conn->close();  // the upstream sees an unfinished body and drops the request
      co_return co_await refuseLargeBody(x);
    }
    if (const error_code ec = co_await writeUpstreamBody(*x.conn, x.buf.data(), n, chunked, x.options.write_timeout)) {
      x.conn->close();
      co_return co_await answerIoFailure(x, ec);
    }
  }
  // A failed terminator shows as a failed read of the answer.
  if (chunked) co_await writeUpstream(*x.conn, std::string(kLastChunk), x.options.write_timeout);
  co_return std::nullopt;
}

// The head of the upstream's final answer (or its 101), skipping informational answers
// (100 Continue).
asio::awaitable<error_code> readResponseHead(Exchange& x) {
  reserveReadSize(x.conn->buffer, x.buf.size());
  error_code ec;
  do {
    x.rp.emplace();
    x.rp->header_limit(static_cast<uint32_t>(x.options.max_header_bytes));
    x.rp->body_limit(kUnlimitedBody);
    if (x.req.isHead()) x.rp->skip(true);
    co_await x.conn->visit([&](auto& s) {
      return http::async_read_header(s, x.conn->buffer, *x.rp, redirect_error(use_awaitable, ec));
    });
  } while (!ec && x.rp->status / 100 == 1 && x.rp->status != 101);
  co_return ec;
}

// Sends the request and reads the head of the answer. nullopt when `x.rp` holds it;
// otherwise the request was answered (or abandoned) here.
asio::awaitable<std::optional<ForwardOutcome>> exchangeHeads(Exchange& x, const std::string& head) {
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    std::optional<UpstreamFailure> failure;
    try {
      x.conn = co_await x.pool.acquire(attempt == 0, reused);
    } catch (const UpstreamFailure& f) {
      failure = f;  // co_await is not allowed inside a handler
    }
    if (failure) co_return co_await answerFailure(x, *failure);
    x.control.active = x.conn;
    // A pooled connection the upstream closed meanwhile fails on first use; a request
    // whose body has not been consumed can be retried once on a fresh connection (what
    // Go's Transport does for idempotent requests).
    const bool retryable = reused && !x.in.has_body;
    error_code ec = co_await writeUpstream(*x.conn, head, x.options.write_timeout);
    if (ec) {
      x.conn->close();
      if (retryable) continue;
      co_return co_await answerIoFailure(x, ec);
    }
    if (x.in.has_body) {
      if (auto ended = co_await sendRequestBody(x)) co_return ended;
    }
    // A client that leaves while the upstream thinks ends the exchange: its upstream
    // connection is closed at once, as Go's transport cancels a request whose context
    // ended (issue 34), instead of holding it until the upstream answers.
    std::shared_ptr<ClientWatch> client = x.out.watchClient([conn = x.conn] { conn->close(); });
    ec = co_await readResponseHead(x);
    co_await x.out.endClientWatch(*client);
    if (client->gone) {
      x.conn->close();
      co_return ForwardOutcome{0, false};
    }
    if (!ec) co_return std::nullopt;
    x.conn->close();
    if (retryable && attempt == 0 && !x.control.stopping) continue;
    if (x.control.stopping) co_return ForwardOutcome{0, false};
    co_return co_await answerIoFailure(x, ec);
  }
}

// A 101: the upgraded connection is spliced until either side closes.
asio::awaitable<ForwardOutcome> relayUpgrade(Exchange& x) {
  const bool ok = x.in.upgrade;
  x.control.streaming = ok;
  ResponseHead head{101, x.rp->reason, filterResponseHeaders(x.rp->headers, ok), std::nullopt, false};
  co_await x.out.writeHead(std::move(head));
  x.out.closeConnectionAfter();
  // stop() may have run while the 101 was being written; nothing would end the splice
  // afterwards.
  if (ok && !x.control.stopping) {
    StreamGauge gauge(x.upstream.metrics(), true);
    co_await spliceUpgraded(*x.out.upgradable(), x.conn, x.options);
  }
  x.conn->close();
  x.control.active.reset();
  x.control.streaming = false;
  co_return ForwardOutcome{101, true};
}

ResponseFraming responseFraming(const Exchange& x) {
  const unsigned status = x.rp->status;
  ResponseFraming out;
  out.no_body = x.req.isHead() || status == 204 || status == 304;
  if (auto cl = x.rp->content_length(); cl && status != 204) out.content_length = *cl;
  return out;
}

// Relays the response body. Back-pressure: at most one buffer is read from the upstream
// before it has been written to the client, so a slow client slows the upstream read and
// nothing else queues. True when the body ended normally (or cleanly on shutdown); false
// when the upstream ended or failed early. Throws when the client cannot be written to.
asio::awaitable<bool> relayResponseBody(Exchange& x) {
  error_code ec;
  while (!x.rp->is_done()) {
    // stop() cancels the upstream read, but the relay may be writing at that moment;
    // checking here keeps a busy stream from outliving the drain.
    if (x.control.stopping && x.control.streaming) co_return true;
    x.rp->setBodyBuffer(x.buf.data(), x.buf.size());
    co_await x.conn->visit(
        [&](auto& s) { return http::async_read_some(s, x.conn->buffer, *x.rp, redirect_error(use_awaitable, ec)); });
    if (ec == http::error::need_buffer) ec = {};
    if (const size_t n = x.rp->bodyUsed(); n > 0) co_await x.out.writeBody(std::string_view(x.buf.data(), n));
    if (ec) {
      // Anything but a clean shutdown is a truncated body, which the client can only
      // learn from the closed connection or the reset stream.
      if (x.control.stopping) co_return true;
      if (!isEndOfStream(ec)) spdlog::debug("upstream read for {} failed: {}", x.req.target, ec.message());
      co_return false;
    }
  }
  co_return true;
}

// The answer's head, then its body as it comes (`held`: the part already read). A
// long-running answer ends when its client leaves.
asio::awaitable<ForwardOutcome> relayResponse(Exchange& x, const ResponseFraming& framing, const std::string& held) {
  const unsigned status = x.rp->status;
  const bool long_running = x.req.info.verb == "watch" || (!framing.no_body && !framing.content_length);
  StreamGauge gauge(x.upstream.metrics(), long_running);
  x.control.streaming = long_running;

  ResponseHead head{status, x.rp->reason, filterResponseHeaders(x.rp->headers, false), framing.content_length,
                    !framing.no_body};
  head.headers.emplace_back(kServedByHeader, "upstream");  // how it was served (docs/routing.md)
  co_await x.out.writeHead(std::move(head));
  if (!held.empty()) co_await x.out.writeBody(held);
  // A client that leaves closes the upstream connection: its watch is released at once.
  std::shared_ptr<ClientWatch> watch;
  if (long_running) watch = x.out.watchClient([conn = x.conn] { conn->close(); });
  bool completed = false;
  std::exception_ptr client_failure;
  try {
    completed = co_await relayResponseBody(x);
  } catch (...) {
    client_failure = std::current_exception();  // co_await is not allowed inside a handler
  }
  if (watch) co_await x.out.endClientWatch(*watch);
  x.control.active.reset();
  x.control.streaming = false;
  if (client_failure) {
    x.conn->close();
    std::rethrow_exception(client_failure);
  }
  if (!completed || (watch && watch->gone)) {
    x.conn->close();
    x.out.abort();
    co_return ForwardOutcome{status, long_running};
  }
  co_await x.out.endBody();
  if (x.rp->is_done()) {
    x.releaseConnection();
  } else {
    x.conn->close();  // ended early at shutdown
  }
  co_return ForwardOutcome{status, long_running};
}

}  // namespace

asio::awaitable<ForwardOutcome> answerInsteadOfUpstream(Exchange& x, const Status& status) {
  HeaderList served_by{{kServedByHeader, "upstream"}};
  const unsigned code = co_await writeStatus(x.out, x.req, status, std::move(served_by));
  co_return ForwardOutcome{code, false};
}

asio::awaitable<ForwardOutcome> answerFailure(Exchange& x, const UpstreamFailure& failure) {
  x.upstream.metrics().upstreamError(failure.kind);
  if (auto* health = x.upstream.health()) health->failed(failure.what());
  spdlog::warn("{} {}: {}", x.req.method, x.req.target, failure.what());
  const Status status{failure.reason, failure.what()};  // named: see answerIoFailure
  co_return co_await answerInsteadOfUpstream(x, status);
}

asio::awaitable<ForwardOutcome> forwardToUpstream(const Request& req, ServerStream& out, UpstreamPool& pool,
                                                  const ServerOptions& options, const WriteSyncTarget* sync) {
  Upstream& upstream = pool.upstream();
  Exchange x{req,      out, pool, out.control(), options, upstream, requestFraming(req, out, options),
             std::vector<char>(options.stream_buffer_bytes)};
  if (const auto* health = upstream.health(); health && !health->up()) co_return co_await answerUnavailable(x, *health);
  if (x.in.body_limit > 0 && x.in.framing == BodyFraming::ContentLength && x.in.length > x.in.body_limit) {
    co_return co_await refuseLargeBody(x);
  }
  // Gateway mode forwards the caller's identity: its own token, or the proxy's with
  // impersonation headers for a client-certificate user (see auth/gateway_admission.h).
  std::string bearer = req.upstream_token.empty() ? upstream.bearerToken() : req.upstream_token;
  if (req.token_in_subprotocol) bearer.clear();
  HeaderList headers = filterRequestHeaders(req.headers, {upstream.hostHeader(), std::move(bearer), req.client_ip});
  headers.insert(headers.end(), req.upstream_identity_headers.begin(), req.upstream_identity_headers.end());
  const std::string head =
      formatRequestHead(req.method, upstream.options().path_prefix + req.target, headers, x.in.framing, x.in.length);

  if (auto answered = co_await exchangeHeads(x, head)) co_return *answered;
  if (auto* health = upstream.health()) health->answered();
  if (x.rp->status == 101) co_return co_await relayUpgrade(x);
  const ResponseFraming framing = responseFraming(x);
  std::string held;
  if (sync) {
    if (auto answered = co_await holdForCache(x, *sync, framing, held)) co_return *answered;
  }
  co_return co_await relayResponse(x, framing, held);
}

}  // namespace proxy::io
