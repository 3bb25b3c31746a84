// Transparent forwarding of one client request to the upstream apiserver:
// request head and body out, response head and body back, both streamed through
// a fixed-size buffer, plus the byte splice after a 101 Switching Protocols.
#include "proxy/passthrough.h"

#include <array>
#include <optional>

#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "proxy/answers.h"
#include "proxy/cache_serving.h"
#include "proxy/client_watch.h"
#include "proxy/routing.h"
#include "proxy/session.h"
#include "proxy/upgrade_splice.h"
#include "proxy/proxy_metrics.h"
#include "proxy/read_route.h"
#include "proxy/status_negotiation.h"
#include "proxy/write_sync.h"
#include "watch/cached_resource.h"
#include "watch/upstream_health.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

bool isEndOfStream(const error_code& ec) {
  return ec == asio::error::eof || ec == http::error::end_of_stream || ec == asio::ssl::error::stream_truncated;
}

// Beast sizes each socket read by the flat_buffer's spare capacity (at least
// 512 bytes). A relay consumes everything it reads, so without a reservation
// every read stays at 512 bytes: 39k reads for 20 MB, 30x slower than direct.
void reserveReadSize(beast::flat_buffer& buffer, size_t bytes) {
  if (buffer.capacity() < bytes) buffer.reserve(bytes);
}

// A Status the proxy answers in the upstream's place. The connection stays open only if
// the request body was fully consumed.
asio::awaitable<ForwardOutcome> answerInsteadOfUpstream(DownstreamRequest& req, const Status& status,
                                                        const ServerOptions& options) {
  HttpAnswer answer = toHttpAnswer(status, statusEncodingFor(findHeader(req.headers, "Accept")));
  const bool keep = req.keep_alive && req.parser.is_done();
  HeaderList headers = {{"Cache-Control", "no-cache, private"}, {"Content-Type", answer.content_type}};
  if (answer.retry_after_seconds > 0) headers.emplace_back("Retry-After", std::to_string(answer.retry_after_seconds));
  headers.emplace_back(kServedByHeader, "upstream");
  co_await writeDownstream(req.stream,
                           formatResponseHead(answer.code, "", headers, BodyFraming::ContentLength, answer.body.size(), keep) + answer.body,
                           options.write_timeout);
  co_return ForwardOutcome{answer.code, keep, false};
}

// Answers the client itself when the upstream could not be reached.
asio::awaitable<ForwardOutcome> answerFailure(DownstreamRequest& req, Upstream& upstream, const UpstreamFailure& failure,
                                              const ServerOptions& options) {
  upstream.metrics().upstreamError(failure.kind);
  if (auto* health = upstream.health()) health->failed(failure.what());
  spdlog::warn("{} {}: {}", req.method, req.target, failure.what());
  const Status status{failure.reason, failure.what()};
  co_return co_await answerInsteadOfUpstream(req, status, options);
}

// While the upstream is known down (watch/upstream_health.h), requests the cache cannot
// answer fail at once instead of each waiting for its own connect timeout. The request
// body is not read, so the connection closes when there was one.
asio::awaitable<ForwardOutcome> answerUnavailable(DownstreamRequest& req, Upstream& upstream,
                                                  const watch::UpstreamHealth& health, const ServerOptions& options) {
  upstream.metrics().upstreamFailedFast();
  Status status{Reason::ServiceUnavailable,
                   upstream.reachError(fmt::format("the upstream has been unreachable for {:.0f}s ({}); retry later",
                                                   health.downSeconds(), health.lastError())),
                   1};
  spdlog::debug("{} {}: {}", req.method, req.target, status.message);
  co_return co_await answerInsteadOfUpstream(req, status, options);
}

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
asio::awaitable<ForwardOutcome> answerAfterCacheSync(DownstreamRequest& req, unsigned status, const HeaderList& response_headers,
                                                     std::string body, const WriteSyncTarget& sync, bool keep,
                                                     const ServerOptions& options) {
  const watch::CachedResource& cached = *sync.cached;
  const std::string resource = cached.resource().displayName();
  HeaderList out_headers = filterResponseHeaders(response_headers, false);
  if (const auto expected = expectationFor(req.info, sync.request_namespace, body)) {
    const auto start = cached.clock().now();
    const bool shown = co_await awaitCacheShows(cached.clock(), *expected, cached.store(), start + sync.timeout);
    const double seconds = std::chrono::duration<double>(cached.clock().now() - start).count();
    sync.metrics.writeSyncWaited(resource, seconds, shown);
    if (!shown) {
      spdlog::warn("{} {}: the cache of {} did not show the write within {} ms", req.method, req.target, resource,
                   sync.timeout.count());
      out_headers.emplace_back("Warning", writeSyncTimeoutWarning(resource, sync.timeout));
    }
  } else {
    sync.metrics.writeSyncSkipped(resource);
  }
  out_headers.emplace_back(kServedByHeader, "upstream");
  co_await writeDownstream(req.stream,
                           formatResponseHead(status, "", out_headers, BodyFraming::ContentLength, body.size(), keep) + body,
                           options.write_timeout);
  co_return ForwardOutcome{status, keep, false};
}

// Relays the response body to the client. Back-pressure: at most one buffer is
// read from the upstream before it has been written to the client, so a slow
// client slows the upstream read and nothing else queues. Returns true when the
// body ended normally; false when the upstream ended or failed early (on
// shutdown a chunked stream still gets its terminating chunk). Throws when the
// client cannot be written to.
asio::awaitable<bool> relayResponseBody(DownstreamRequest& req, UpstreamConnection& conn, UpstreamParser& rp,
                                        std::vector<char>& buf, bool chunked, const SessionControl& control,
                                        const ServerOptions& options) {
  error_code ec;
  while (!rp.is_done()) {
    // stop() cancels the upstream read, but the relay may be writing at that
    // moment; checking here keeps a busy stream from outliving the drain.
    if (control.stopping && control.streaming) ec = asio::error::operation_aborted;
    rp.setBodyBuffer(buf.data(), buf.size());
    if (!ec) {
      co_await conn.visit([&](auto& s) { return http::async_read_some(s, conn.buffer, rp, redirect_error(use_awaitable, ec)); });
    }
    if (ec == http::error::need_buffer) ec = {};
    const size_t n = rp.bodyUsed();
    if (n > 0) co_await writeDownstreamBody(req.stream, buf.data(), n, chunked, options.write_timeout);
    if (ec) {
      // Anything but a clean shutdown is a truncated body, which the client can
      // only learn from the closed connection.
      if (control.stopping && chunked) {
        co_await writeDownstream(req.stream, "0\r\n\r\n", options.write_timeout);
      } else if (!isEndOfStream(ec)) {
        spdlog::debug("upstream read for {} failed: {}", req.target, ec.message());
      }
      co_return false;
    }
  }
  co_return true;
}

// 413 as the apiserver words it (errors.NewRequestEntityTooLargeError), then the
// connection closes because the rest of the body is unread (what Go's server does
// when more than 256 KiB remain). Before closing, the body still in flight is
// read and dropped for a moment, as Go's rstAvoidanceDelay does: closing with
// unread data sends a reset that can destroy the answer in the client's buffer.
asio::awaitable<ForwardOutcome> refuseLargeBody(DownstreamRequest& req, const ServerOptions& options) {
  spdlog::debug("{} {} from {}: body larger than {} bytes", req.method, req.target, req.client_ip,
                options.max_request_body_bytes);
  const HttpAnswer answer = toHttpAnswer(
      {Reason::RequestEntityTooLarge, fmt::format("Request entity too large: limit is {}", options.max_request_body_bytes)},
      statusEncodingFor(findHeader(req.headers, "Accept")));
  co_await writeDownstream(req.stream, formatAnswer(answer, false), options.write_timeout);
  error_code ec;
  req.stream.shutdownSend();
  std::array<char, 16384> sink;
  req.stream.expires_after(std::chrono::milliseconds(500));
  while (!ec) co_await req.stream.async_read_some(asio::buffer(sink), redirect_error(use_awaitable, ec));
  req.stream.expires_never();
  co_return ForwardOutcome{answer.code, false, false};
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

// How the client's request body comes, and what the upstream may be sent of it.
struct RequestFraming {
  BodyFraming framing = BodyFraming::None;
  uint64_t length = 0;  // with ContentLength
  bool has_body = false;
  bool upgrade = false;
  uint64_t body_limit = 0;  // 0: unlimited
};

RequestFraming requestFraming(DownstreamRequest& req, const ServerOptions& options) {
  RequestFraming in;
  if (req.parser.chunked()) {
    in.framing = BodyFraming::Chunked;
  } else if (auto cl = req.parser.content_length()) {
    in.framing = BodyFraming::ContentLength;
    in.length = *cl;
  }
  in.has_body = !req.parser.is_done();
  in.upgrade = isUpgradeRequest(req.headers);
  in.body_limit = in.has_body && !in.upgrade && bodyIsLimited(req.info) ? options.max_request_body_bytes : 0;
  return in;
}

// How the upstream's answer goes to the client.
struct ResponseFraming {
  BodyFraming framing = BodyFraming::None;
  uint64_t length = 0;  // with ContentLength
  bool no_body = false;
  bool keep = false;  // the client connection serves another request afterwards
  bool chunked() const { return framing == BodyFraming::Chunked; }
};

// One request on its way through the upstream: what the steps of forwardToUpstream share.
struct Exchange {
  DownstreamRequest& req;
  UpstreamPool& pool;
  SessionControl& control;
  const ServerOptions& options;
  Upstream& upstream;
  RequestFraming in;
  std::vector<char> buf;  // relay buffer, both ways
  UpstreamConnectionPtr conn;
  std::optional<UpstreamParser> rp;  // the upstream's answer once its head is read

  asio::awaitable<ForwardOutcome> answerIoFailure(const error_code& ec) {
    co_return co_await answerFailure(req, upstream, {Reason::ServiceUnavailable, "io", upstream.reachError(ec.message())},
                                     options);
  }
  // Returns the connection to the pool when the upstream keeps it open.
  void releaseConnection() {
    if (rp->keep_alive()) {
      pool.release(std::move(conn));
    } else {
      conn->close();
    }
  }
};

// The request body, client to upstream. nullopt once it is all sent; otherwise the
// request ended here (the client left, the body was too large, the upstream failed).
asio::awaitable<std::optional<ForwardOutcome>> sendRequestBody(Exchange& x) {
  DownstreamRequest& req = x.req;
  reserveReadSize(req.buffer, x.buf.size());
  if (headerNameEquals(findHeader(req.headers, "Expect"), "100-continue")) {
    co_await writeDownstream(req.stream, "HTTP/1.1 100 Continue\r\n\r\n", x.options.write_timeout);
  }
  const bool chunked = x.in.framing == BodyFraming::Chunked;
  uint64_t body_bytes = 0;
  error_code ec;
  while (!req.parser.is_done()) {
    req.parser.setBodyBuffer(x.buf.data(), x.buf.size());
    req.stream.expires_after(x.options.idle_timeout);
    co_await http::async_read_some(req.stream, req.buffer, req.parser, redirect_error(use_awaitable, ec));
    req.stream.expires_never();
    if (ec == http::error::need_buffer) ec = {};
    const size_t n = req.parser.bodyUsed();
    if (ec) {  // the client went away mid-body: nobody to answer
      x.conn->close();
      co_return ForwardOutcome{0, false, false};
    }
    if (n == 0) continue;
    body_bytes += n;
    if (x.in.body_limit > 0 && body_bytes > x.in.body_limit) {  // a chunked body: its size shows only now
      x.conn->close();  // the upstream sees an unfinished body and drops the request
      co_return co_await refuseLargeBody(req, x.options);
    }
    ec = co_await writeUpstreamBody(*x.conn, x.buf.data(), n, chunked, x.options.write_timeout);
    if (ec) {
      x.conn->close();
      co_return co_await x.answerIoFailure(ec);
    }
  }
  // A failed terminator shows as a failed read of the answer.
  if (chunked) co_await writeUpstream(*x.conn, "0\r\n\r\n", x.options.write_timeout);
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
    if (x.req.method == "HEAD") x.rp->skip(true);
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
    if (failure) co_return co_await answerFailure(x.req, x.upstream, *failure, x.options);
    x.control.active = x.conn;
    // A pooled connection the upstream closed meanwhile fails on first use; a
    // request whose body has not been consumed can be retried once on a fresh
    // connection (what Go's Transport does for idempotent requests).
    const bool retryable = reused && !x.in.has_body;
    error_code ec = co_await writeUpstream(*x.conn, head, x.options.write_timeout);
    if (ec) {
      x.conn->close();
      if (retryable) continue;
      co_return co_await x.answerIoFailure(ec);
    }
    if (x.in.has_body) {
      if (auto ended = co_await sendRequestBody(x)) co_return ended;
    }
    ec = co_await readResponseHead(x);
    if (!ec) co_return std::nullopt;
    x.conn->close();
    if (retryable && attempt == 0 && !x.control.stopping) continue;
    if (x.control.stopping) co_return ForwardOutcome{0, false, false};
    co_return co_await x.answerIoFailure(ec);
  }
}

// A 101: the upgraded connection is spliced until either side closes.
asio::awaitable<ForwardOutcome> relayUpgrade(Exchange& x) {
  DownstreamRequest& req = x.req;
  const bool ok = x.in.upgrade;
  x.control.streaming = ok;
  co_await writeDownstream(req.stream,
                           formatResponseHead(101, x.rp->reason, filterResponseHeaders(x.rp->headers, ok),
                                              BodyFraming::None, 0, false),
                           x.options.write_timeout);
  // stop() may have run while the 101 was being written; nothing would end
  // the splice afterwards.
  if (ok && !x.control.stopping) {
    StreamGauge gauge(x.upstream.metrics(), true);
    co_await spliceUpgraded(req, x.conn, x.options);
  }
  x.conn->close();
  x.control.active.reset();
  x.control.streaming = false;
  co_return ForwardOutcome{101, false, true};
}

ResponseFraming responseFraming(const Exchange& x) {
  const DownstreamRequest& req = x.req;
  const unsigned status = x.rp->status;
  ResponseFraming out;
  out.no_body = req.method == "HEAD" || status == 204 || status == 304;
  out.keep = req.keep_alive && req.parser.is_done() && !x.control.stopping;
  if (auto cl = x.rp->content_length(); cl && status != 204) {
    out.framing = BodyFraming::ContentLength;
    out.length = *cl;
  } else if (out.no_body) {
    out.framing = BodyFraming::None;
  } else if (req.http10) {
    out.keep = false;  // an HTTP/1.0 client reads an unsized body until close
  } else {
    out.framing = BodyFraming::Chunked;
  }
  return out;
}

// Read-your-writes: a successful write's answer waits for the cache. Bodies the proxy
// cannot read (compressed) or too large to hold pass unheld; `held` then carries what
// was already read. nullopt: relay the answer as usual.
asio::awaitable<std::optional<ForwardOutcome>> holdForCache(Exchange& x, const WriteSyncTarget& sync,
                                                            const ResponseFraming& out, std::string& held) {
  const unsigned status = x.rp->status;
  if (status / 100 != 2 || out.no_body || !findHeader(x.rp->headers, "Content-Encoding").empty()) {
    co_return std::nullopt;
  }
  const bool read = co_await readHeldBody(*x.conn, *x.rp, x.buf, held);
  if (!read) {  // the upstream failed mid-answer: like a truncated relay
    x.conn->close();
    x.control.active.reset();
    co_return ForwardOutcome{status, false, false};
  }
  if (!x.rp->is_done()) co_return std::nullopt;
  // The upstream connection is done with before the wait, so nothing idles on it.
  x.releaseConnection();
  x.control.active.reset();
  co_return co_await answerAfterCacheSync(x.req, status, x.rp->headers, std::move(held), sync, out.keep, x.options);
}

// The answer's head, then its body as it comes (`held`: the part already read). A
// long-running answer ends when its client leaves.
asio::awaitable<ForwardOutcome> relayResponse(Exchange& x, const ResponseFraming& out, const std::string& held) {
  DownstreamRequest& req = x.req;
  const unsigned status = x.rp->status;
  const bool long_running = req.info.verb == "watch" || (!out.no_body && !x.rp->content_length());
  StreamGauge gauge(x.upstream.metrics(), long_running);
  x.control.streaming = long_running;

  HeaderList out_headers = filterResponseHeaders(x.rp->headers, false);
  out_headers.emplace_back(kServedByHeader, "upstream");  // how it was served (docs/routing.md)
  co_await writeDownstream(req.stream, formatResponseHead(status, x.rp->reason, out_headers, out.framing, out.length, out.keep),
                           x.options.write_timeout);
  if (!held.empty()) co_await writeDownstreamBody(req.stream, held.data(), held.size(), out.chunked(), x.options.write_timeout);
  // A client that leaves closes the upstream connection: its watch is released at once.
  std::shared_ptr<ClientWatch> watch;
  if (long_running) watch = startClientWatch(req.stream, req.buffer, [conn = x.conn] { conn->close(); });
  bool completed = false;
  std::exception_ptr client_failure;
  try {
    completed = co_await relayResponseBody(req, *x.conn, *x.rp, x.buf, out.chunked(), x.control, x.options);
  } catch (...) {
    client_failure = std::current_exception();  // co_await is not allowed inside a handler
  }
  if (watch) co_await endClientWatch(*watch, req.stream);
  x.control.active.reset();
  x.control.streaming = false;
  if (client_failure) {
    x.conn->close();
    std::rethrow_exception(client_failure);
  }
  if (!completed || (watch && watch->gone)) {
    x.conn->close();
    co_return ForwardOutcome{status, false, long_running};
  }
  if (out.chunked()) co_await writeDownstream(req.stream, "0\r\n\r\n", x.options.write_timeout);
  x.releaseConnection();
  co_return ForwardOutcome{status, out.keep, long_running};
}

}  // namespace

asio::awaitable<void> writeDownstream(DownstreamStream& stream, const std::string& data, std::chrono::milliseconds timeout) {
  const size_t sent = stream.trySend(data.data(), data.size());
  if (sent == data.size()) co_return;
  stream.expires_after(timeout);
  co_await asio::async_write(stream, asio::buffer(data.data() + sent, data.size() - sent), use_awaitable);
  stream.expires_never();
}

asio::awaitable<void> writeDownstreamBody(DownstreamStream& stream, const char* data, size_t n, bool chunked,
                                          std::chrono::milliseconds timeout) {
  stream.expires_after(timeout);
  if (chunked) {
    const std::string size_line = fmt::format("{:x}\r\n", n);
    std::array<asio::const_buffer, 3> framed = {asio::buffer(size_line), asio::buffer(data, n), asio::buffer("\r\n", 2)};
    co_await asio::async_write(stream, framed, use_awaitable);
  } else {
    co_await asio::async_write(stream, asio::buffer(data, n), use_awaitable);
  }
  stream.expires_never();
}

asio::awaitable<ForwardOutcome> forwardToUpstream(DownstreamRequest& req, UpstreamPool& pool, SessionControl& control,
                                                  const ServerOptions& options, const WriteSyncTarget* sync) {
  Upstream& upstream = pool.upstream();
  if (const auto* health = upstream.health(); health && !health->up()) {
    co_return co_await answerUnavailable(req, upstream, *health, options);
  }
  Exchange x{req, pool, control, options, upstream, requestFraming(req, options), std::vector<char>(options.stream_buffer_bytes)};
  if (x.in.body_limit > 0 && x.in.framing == BodyFraming::ContentLength && x.in.length > x.in.body_limit) {
    co_return co_await refuseLargeBody(req, options);
  }
  // Gateway mode forwards the caller's identity: its own token, or the proxy's with
  // impersonation headers for a client-certificate user (see auth/gateway_admission.h).
  HeaderList headers = filterRequestHeaders(
      req.headers, {upstream.hostHeader(), req.upstream_token.empty() ? upstream.bearerToken() : req.upstream_token,
                    req.client_ip});
  headers.insert(headers.end(), req.upstream_identity_headers.begin(), req.upstream_identity_headers.end());
  const std::string head =
      formatRequestHead(req.method, upstream.options().path_prefix + req.target, headers, x.in.framing, x.in.length);

  if (auto answered = co_await exchangeHeads(x, head)) co_return *answered;
  if (auto* health = upstream.health()) health->answered();
  if (x.rp->status == 101) co_return co_await relayUpgrade(x);
  const ResponseFraming out = responseFraming(x);
  std::string held;
  if (sync) {
    if (auto answered = co_await holdForCache(x, *sync, out, held)) co_return *answered;
  }
  co_return co_await relayResponse(x, out, held);
}

}  // namespace proxy::io
