// Transparent forwarding of one client request to the upstream apiserver:
// request head and body out, response head and body back, both streamed through
// a fixed-size buffer, plus the byte splice after a 101 Switching Protocols.
#include <array>
#include <optional>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "proxy/cache_serving.h"
#include "proxy/io_internal.h"
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

template <class F>
auto onUpstream(UpstreamConnection& conn, F&& f) {
  return std::visit(std::forward<F>(f), conn.stream);
}

// Writes `data` to the upstream as one body piece, chunk-framed when `chunked`.
asio::awaitable<error_code> writeUpstreamBody(UpstreamConnection& conn, const char* data, size_t n, bool chunked,
                                              std::chrono::milliseconds timeout) {
  error_code ec;
  const std::string size_line = fmt::format("{:x}\r\n", n);
  std::array<asio::const_buffer, 3> framed = {asio::buffer(size_line), asio::buffer(data, n), asio::buffer("\r\n", 2)};
  conn.tcp().expires_after(timeout);
  if (chunked) {
    co_await onUpstream(conn, [&](auto& s) { return asio::async_write(s, framed, redirect_error(use_awaitable, ec)); });
  } else {
    co_await onUpstream(conn, [&](auto& s) {
      return asio::async_write(s, asio::buffer(data, n), redirect_error(use_awaitable, ec));
    });
  }
  conn.tcp().expires_never();
  co_return ec;
}

asio::awaitable<error_code> writeUpstreamRaw(UpstreamConnection& conn, const std::string& data,
                                             std::chrono::milliseconds timeout) {
  error_code ec;
  conn.tcp().expires_after(timeout);
  co_await onUpstream(conn, [&](auto& s) { return asio::async_write(s, asio::buffer(data), redirect_error(use_awaitable, ec)); });
  conn.tcp().expires_never();
  co_return ec;
}

// Writes one piece of a response body to the client. Throws when the client is gone.
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

// Copies upstream -> client until either side fails or closes.
asio::awaitable<void> pumpToClient(UpstreamConnectionPtr conn, DownstreamStream& client, size_t buffer_bytes) {
  std::vector<char> buf(buffer_bytes);
  error_code ec;
  while (true) {
    size_t n = co_await onUpstream(
        *conn, [&](auto& s) { return s.async_read_some(asio::buffer(buf), redirect_error(use_awaitable, ec)); });
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
      co_await onUpstream(
          *conn, [&](auto& s) { return asio::async_write(s, asio::buffer(buf.data(), n), redirect_error(use_awaitable, wec)); });
      if (wec) break;
    }
    if (ec) break;
  }
}

// After a 101: relays bytes both ways until either side closes, then closes
// both (like Go's ReverseProxy). Bytes already buffered past the two message
// heads go first.
asio::awaitable<void> spliceUpgraded(DownstreamRequest& req, UpstreamConnectionPtr conn, const ServerOptions& options) {
  error_code ec;
  req.stream.expires_never();
  if (conn->buffer.size() > 0) {
    co_await asio::async_write(req.stream, conn->buffer.data(), redirect_error(use_awaitable, ec));
    conn->buffer.consume(conn->buffer.size());
  }
  if (!ec && req.buffer.size() > 0) {
    co_await onUpstream(*conn, [&](auto& s) { return asio::async_write(s, req.buffer.data(), redirect_error(use_awaitable, ec)); });
    req.buffer.consume(req.buffer.size());
  }
  if (ec) co_return;

  auto executor = co_await asio::this_coro::executor;
  auto upward_done = std::make_shared<asio::steady_timer>(executor, std::chrono::steady_clock::time_point::max());
  auto upward_finished = std::make_shared<bool>(false);
  asio::co_spawn(executor, pumpToUpstream(conn, req.stream, options.stream_buffer_bytes),
                 [conn, &stream = req.stream, upward_done, upward_finished](std::exception_ptr) {
                   *upward_finished = true;
                   error_code ignored;
                   conn->close();
                   stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
                   upward_done->cancel();
                 });
  co_await pumpToClient(conn, req.stream, options.stream_buffer_bytes);
  conn->close();
  req.stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  if (!*upward_finished) co_await upward_done->async_wait(redirect_error(use_awaitable, ec));
}

// Answers the client itself when the upstream could not be reached. The
// connection stays open only if the request body was fully consumed.
asio::awaitable<ForwardOutcome> answerFailure(DownstreamRequest& req, Upstream& upstream, const UpstreamFailure& failure,
                                              const ServerOptions& options) {
  upstream.metrics().upstreamError(failure.kind);
  if (auto* health = upstream.health()) health->failed(failure.what());
  spdlog::warn("{} {}: {}", req.method, req.target, failure.what());
  HttpAnswer answer = toHttpAnswer({failure.reason, failure.what()}, statusEncodingFor(findHeader(req.headers, "Accept")));
  const bool keep = req.keep_alive && req.parser.is_done();
  HeaderList headers = {{"Cache-Control", "no-cache, private"}, {"Content-Type", answer.content_type}, {kServedByHeader, "upstream"}};
  co_await writeDownstream(req.stream,
                           formatResponseHead(answer.code, "", headers, BodyFraming::ContentLength, answer.body.size(), keep) + answer.body,
                           options.write_timeout);
  co_return ForwardOutcome{answer.code, keep, false};
}

// While the upstream is known down (watch/upstream_health.h), requests the cache cannot
// answer fail at once instead of each waiting for its own connect timeout. The request
// body is not read, so the connection closes when there was one.
asio::awaitable<ForwardOutcome> answerUnavailable(DownstreamRequest& req, Upstream& upstream,
                                                  const watch::UpstreamHealth& health, const ServerOptions& options) {
  upstream.metrics().upstreamFailedFast();
  ApiStatus status{Reason::ServiceUnavailable,
                   upstream.reachError(fmt::format("the upstream has been unreachable for {:.0f}s ({}); retry later",
                                                   health.downSeconds(), health.lastError())),
                   1};
  spdlog::debug("{} {}: {}", req.method, req.target, status.message);
  HttpAnswer answer = toHttpAnswer(status, statusEncodingFor(findHeader(req.headers, "Accept")));
  const bool keep = req.keep_alive && req.parser.is_done();
  HeaderList headers = {{"Cache-Control", "no-cache, private"},
                        {"Content-Type", answer.content_type},
                        {"Retry-After", std::to_string(answer.retry_after_seconds)},
                        {kServedByHeader, "upstream"}};
  co_await writeDownstream(req.stream,
                           formatResponseHead(answer.code, "", headers, BodyFraming::ContentLength, answer.body.size(), keep) + answer.body,
                           options.write_timeout);
  co_return ForwardOutcome{answer.code, keep, false};
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
    co_await onUpstream(conn, [&](auto& s) { return http::async_read_some(s, conn.buffer, rp, redirect_error(use_awaitable, ec)); });
    if (ec == http::error::need_buffer) ec = {};
    body.append(buf.data(), rp.bodyUsed());
    // A body that ends with the connection completes the parser; anything else is cut short.
    if (ec) co_return rp.is_done();
  }
  co_return true;
}

// Waits until `store` shows `expected` (true) or `deadline` passes (false). The watch
// event usually lands within a millisecond or two of the answer, so the polling interval
// starts small and stays small.
asio::awaitable<bool> awaitCacheShows(const WriteExpectation& expected, const cache::ThreadSafeStore& store,
                                      std::chrono::steady_clock::time_point deadline) {
  co_return co_await awaitStore([&expected, &store] { return satisfiedBy(expected, store); }, deadline,
                                std::chrono::microseconds(200), std::chrono::milliseconds(2));
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
    const auto start = std::chrono::steady_clock::now();
    const bool shown = co_await awaitCacheShows(*expected, cached.store(), start + sync.timeout);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
      co_await onUpstream(conn, [&](auto& s) { return http::async_read_some(s, conn.buffer, rp, redirect_error(use_awaitable, ec)); });
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

// Watches the client while a long-running response streams, so that an
// upstream watch is released as soon as its client goes away rather than at
// its next event. A client sends nothing while it waits for a response, so an
// EOF or error means it is gone (Go's net/http cancels the request on the same
// signal). Bytes that do arrive (a pipelined request) stay in the session's
// buffer for the next parse.
struct ClientWatch {
  bool gone = false;
  bool finished = false;
  std::shared_ptr<asio::steady_timer> done;  // cancelled when the watch ends
};

asio::awaitable<void> watchClient(DownstreamStream& stream, beast::flat_buffer& buffer, UpstreamConnectionPtr conn,
                                  std::shared_ptr<ClientWatch> watch) {
  error_code ec;
  // Untimed: the timeouts of the TCP layer belong to the relay's writes.
  const size_t n = co_await stream.async_read_some_untimed(buffer.prepare(4096), redirect_error(use_awaitable, ec));
  buffer.commit(n);
  if (ec && ec != asio::error::operation_aborted) {
    watch->gone = true;
    conn->close();
  }
}

// Whether the apiserver would read this request's body into memory and so apply
// MaxRequestBodyBytes to it (handlers/rest.go limitedReadBody): API writes and
// their subresources. Connect subresources (proxy, exec, attach, portforward)
// stream their bodies and are not limited.
bool bodyIsLimited(const RequestInfo& info) {
  if (!info.is_resource_request) return false;
  const std::string& sub = info.subresource;
  return sub != "proxy" && sub != "exec" && sub != "attach" && sub != "portforward";
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
  req.stream.socket().shutdown(asio::socket_base::shutdown_send, ec);
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

}  // namespace

asio::awaitable<void> writeDownstream(DownstreamStream& stream, const std::string& data, std::chrono::milliseconds timeout) {
  stream.expires_after(timeout);
  co_await asio::async_write(stream, asio::buffer(data), use_awaitable);
  stream.expires_never();
}

std::string formatAnswer(const HttpAnswer& answer, bool keep_alive) {
  HeaderList headers = {{"Cache-Control", "no-cache, private"}, {"Content-Type", answer.content_type}};
  if (answer.retry_after_seconds > 0) headers.emplace_back("Retry-After", std::to_string(answer.retry_after_seconds));
  return formatResponseHead(answer.code, "", headers, BodyFraming::ContentLength, answer.body.size(), keep_alive) +
         answer.body;
}

asio::awaitable<ForwardOutcome> forwardToUpstream(DownstreamRequest& req, UpstreamPool& pool, SessionControl& control,
                                                  const ServerOptions& options, const WriteSyncTarget* sync) {
  Upstream& upstream = pool.upstream();
  if (const auto* health = upstream.health(); health && !health->up()) {
    co_return co_await answerUnavailable(req, upstream, *health, options);
  }
  const UpstreamOptions& up = upstream.options();
  BodyFraming framing = BodyFraming::None;
  uint64_t length = 0;
  if (req.parser.chunked()) {
    framing = BodyFraming::Chunked;
  } else if (auto cl = req.parser.content_length()) {
    framing = BodyFraming::ContentLength;
    length = *cl;
  }
  const bool has_body = !req.parser.is_done();
  const bool upgrade = isUpgradeRequest(req.headers);
  const uint64_t body_limit =
      has_body && !upgrade && bodyIsLimited(req.info) ? options.max_request_body_bytes : 0;  // 0: unlimited
  if (body_limit > 0 && framing == BodyFraming::ContentLength && length > body_limit) {
    co_return co_await refuseLargeBody(req, options);
  }
  // Gateway mode forwards the caller's identity: its own token, or the proxy's with
  // impersonation headers for a client-certificate user (see http_server.cpp).
  HeaderList headers = filterRequestHeaders(
      req.headers, {upstream.hostHeader(), req.upstream_token.empty() ? upstream.bearerToken() : req.upstream_token,
                    req.client_ip});
  headers.insert(headers.end(), req.upstream_identity_headers.begin(), req.upstream_identity_headers.end());
  const std::string head = formatRequestHead(req.method, up.path_prefix + req.target, headers, framing, length);

  UpstreamConnectionPtr conn;
  std::optional<UpstreamParser> rp;
  std::vector<char> buf(options.stream_buffer_bytes);
  error_code ec;
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    std::optional<UpstreamFailure> failure;
    try {
      conn = co_await pool.acquire(attempt == 0, reused);
    } catch (const UpstreamFailure& f) {
      failure = f;  // co_await is not allowed inside a handler
    }
    if (failure) co_return co_await answerFailure(req, upstream, *failure, options);
    control.active = conn;
    // A pooled connection the upstream closed meanwhile fails on first use; a
    // request whose body has not been consumed can be retried once on a fresh
    // connection (what Go's Transport does for idempotent requests).
    const bool retryable = reused && !has_body;
    ec = co_await writeUpstreamRaw(*conn, head, options.write_timeout);
    if (ec) {
      conn->close();
      if (retryable) continue;
      co_return co_await answerFailure(req, upstream, {Reason::ServiceUnavailable, "io", upstream.reachError(ec.message())}, options);
    }
    if (has_body) {
      reserveReadSize(req.buffer, buf.size());
      if (headerNameEquals(findHeader(req.headers, "Expect"), "100-continue")) {
        co_await writeDownstream(req.stream, "HTTP/1.1 100 Continue\r\n\r\n", options.write_timeout);
      }
      const bool chunked = framing == BodyFraming::Chunked;
      uint64_t body_bytes = 0;
      while (!req.parser.is_done()) {
        req.parser.setBodyBuffer(buf.data(), buf.size());
        req.stream.expires_after(options.idle_timeout);
        co_await http::async_read_some(req.stream, req.buffer, req.parser, redirect_error(use_awaitable, ec));
        req.stream.expires_never();
        if (ec == http::error::need_buffer) ec = {};
        const size_t n = req.parser.bodyUsed();
        if (ec) {  // the client went away mid-body: nobody to answer
          conn->close();
          co_return ForwardOutcome{0, false, false};
        }
        if (n == 0) continue;
        body_bytes += n;
        if (body_limit > 0 && body_bytes > body_limit) {  // a chunked body: its size shows only now
          conn->close();  // the upstream sees an unfinished body and drops the request
          co_return co_await refuseLargeBody(req, options);
        }
        ec = co_await writeUpstreamBody(*conn, buf.data(), n, chunked, options.write_timeout);
        if (ec) {
          conn->close();
          co_return co_await answerFailure(req, upstream, {Reason::ServiceUnavailable, "io", upstream.reachError(ec.message())}, options);
        }
      }
      if (chunked) ec = co_await writeUpstreamRaw(*conn, "0\r\n\r\n", options.write_timeout);
    }
    reserveReadSize(conn->buffer, buf.size());
    // Skip informational answers (100 Continue) until the final one or a 101.
    do {
      rp.emplace();
      rp->header_limit(static_cast<uint32_t>(options.max_header_bytes));
      rp->body_limit(kUnlimitedBody);
      if (req.method == "HEAD") rp->skip(true);
      co_await onUpstream(*conn, [&](auto& s) { return http::async_read_header(s, conn->buffer, *rp, redirect_error(use_awaitable, ec)); });
    } while (!ec && rp->status / 100 == 1 && rp->status != 101);
    if (ec) {
      conn->close();
      if (retryable && attempt == 0 && !control.stopping) continue;
      if (control.stopping) co_return ForwardOutcome{0, false, false};
      co_return co_await answerFailure(req, upstream, {Reason::ServiceUnavailable, "io", upstream.reachError(ec.message())}, options);
    }
    break;
  }
  if (auto* health = upstream.health()) health->answered();

  const unsigned status = rp->status;
  const HeaderList& response_headers = rp->headers;

  if (status == 101) {
    const bool ok = upgrade;
    control.streaming = ok;
    co_await writeDownstream(req.stream, formatResponseHead(101, rp->reason, filterResponseHeaders(response_headers, ok), BodyFraming::None, 0, false), options.write_timeout);
    // stop() may have run while the 101 was being written; nothing would end
    // the splice afterwards.
    if (ok && !control.stopping) {
      StreamGauge gauge(upstream.metrics(), true);
      co_await spliceUpgraded(req, conn, options);
    }
    conn->close();
    control.active.reset();
    control.streaming = false;
    co_return ForwardOutcome{101, false, true};
  }

  const bool no_body = req.method == "HEAD" || status == 204 || status == 304;
  BodyFraming out_framing = BodyFraming::None;
  uint64_t out_length = 0;
  bool keep = req.keep_alive && req.parser.is_done() && !control.stopping;
  if (auto cl = rp->content_length(); cl && status != 204) {
    out_framing = BodyFraming::ContentLength;
    out_length = *cl;
  } else if (no_body) {
    out_framing = BodyFraming::None;
  } else if (req.http10) {
    keep = false;  // an HTTP/1.0 client reads an unsized body until close
  } else {
    out_framing = BodyFraming::Chunked;
  }
  const bool chunked = out_framing == BodyFraming::Chunked;

  // Read-your-writes: a successful write's answer waits for the cache. Bodies the proxy
  // cannot read (compressed) or too large to hold pass unheld; `held` then carries what
  // was already read.
  std::string held;
  if (sync && status / 100 == 2 && !no_body && findHeader(response_headers, "Content-Encoding").empty()) {
    const bool read = co_await readHeldBody(*conn, *rp, buf, held);
    if (!read) {  // the upstream failed mid-answer: like a truncated relay
      conn->close();
      control.active.reset();
      co_return ForwardOutcome{status, false, false};
    }
    if (rp->is_done()) {
      // The upstream connection is done with before the wait, so nothing idles on it.
      if (rp->keep_alive()) {
        pool.release(std::move(conn));
      } else {
        conn->close();
      }
      control.active.reset();
      co_return co_await answerAfterCacheSync(req, status, response_headers, std::move(held), *sync, keep, options);
    }
  }
  const bool long_running = req.info.verb == "watch" || (!no_body && !rp->content_length());
  StreamGauge gauge(upstream.metrics(), long_running);
  control.streaming = long_running;

  HeaderList out_headers = filterResponseHeaders(response_headers, false);
  out_headers.emplace_back(kServedByHeader, "upstream");  // how it was served (docs/routing.md)
  co_await writeDownstream(req.stream, formatResponseHead(status, rp->reason, out_headers, out_framing, out_length, keep),
                           options.write_timeout);
  if (!held.empty()) co_await writeDownstreamBody(req.stream, held.data(), held.size(), chunked, options.write_timeout);
  std::shared_ptr<ClientWatch> watch;
  if (long_running) {
    watch = std::make_shared<ClientWatch>();
    auto executor = co_await asio::this_coro::executor;
    watch->done = std::make_shared<asio::steady_timer>(executor, std::chrono::steady_clock::time_point::max());
    asio::co_spawn(executor, watchClient(req.stream, req.buffer, conn, watch), [watch](std::exception_ptr) {
      watch->finished = true;
      watch->done->cancel();
    });
  }
  bool completed = false;
  std::exception_ptr client_failure;
  try {
    completed = co_await relayResponseBody(req, *conn, *rp, buf, chunked, control, options);
  } catch (...) {
    client_failure = std::current_exception();  // co_await is not allowed inside a handler
  }
  if (watch && !watch->finished) {
    // The watch reads the client socket and the session's buffer, so it must be
    // over before this frame (and maybe the session) goes away.
    error_code ignored;
    req.stream.socket().cancel(ignored);
    co_await watch->done->async_wait(redirect_error(use_awaitable, ignored));
  }
  control.active.reset();
  control.streaming = false;
  if (client_failure) {
    conn->close();
    std::rethrow_exception(client_failure);
  }
  if (!completed || (watch && watch->gone)) {
    conn->close();
    co_return ForwardOutcome{status, false, long_running};
  }
  if (chunked) co_await writeDownstream(req.stream, "0\r\n\r\n", options.write_timeout);
  if (rp->keep_alive()) {
    pool.release(std::move(conn));
  } else {
    conn->close();
  }
  co_return ForwardOutcome{status, keep, long_running};
}

}  // namespace proxy::io
