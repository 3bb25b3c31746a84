// Upstream: TLS material and identity of the apiserver; UpstreamPool: keep-alive
// connections to it, one pool per io thread.

#include "proxy/upstream/upstream_pool.h"

#include "proxy/http/chunk_framing.h"

#include <sys/socket.h>

#include <array>
#include <cerrno>

#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include "proxy/observability/proxy_metrics.h"
#include "proxy/http/raw_parser.h"
#include "proxy/upstream/upstream_tls.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;

std::unique_ptr<asio::ssl::context> makeTlsContext(const UpstreamOptions& options) {
  auto tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  upstream::configureUpstreamTls(tls->native_handle(), options);
  return tls;
}

std::string lowerFirst(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = static_cast<char>(s[0] - 'A' + 'a');
  return s;
}

// True when a pooled connection is still usable: the peer has neither closed it
// nor sent anything unsolicited (a Go server sends nothing on an idle connection;
// a TLS close_notify or an EOF means it is going away).
bool idleConnectionAlive(UpstreamConnection& conn) {
  if (!conn.tcp().socket().is_open() || conn.buffer.size() != 0) return false;
  char probe;
  ssize_t n = ::recv(conn.tcp().socket().native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

Upstream::Upstream(const UpstreamOptions& options, ProxyMetrics& metrics)
    : options_(options), metrics_(metrics), tokens_(options) {
  const bool ipv6 = options_.host.find(':') != std::string::npos;
  const std::string host = ipv6 ? "[" + options_.host + "]" : options_.host;
  host_header_ = fmt::format("{}:{}", host, options_.port);
  url_ = fmt::format("{}://{}", options_.scheme, host_header_);
  if (options_.scheme == "https") tls_ = makeTlsContext(options_);
}

std::string Upstream::reachError(const std::string& detail) const {
  return fmt::format("error trying to reach upstream {}: {}", url_, detail);
}

UpstreamPool::UpstreamPool(Upstream& upstream, asio::io_context& ctx, const ServerOptions& options,
                           const cache::Clock& clock)
    : upstream_(upstream),
      ctx_(ctx),
      clock_(clock),
      max_idle_(options.max_idle_upstream_connections),
      idle_timeout_(options.upstream_idle_timeout) {}

asio::awaitable<UpstreamConnectionPtr> UpstreamPool::acquire(bool allow_reuse, bool& reused) {
  reused = false;
  const auto now = clock_.now();
  while (allow_reuse && !idle_.empty()) {
    UpstreamConnectionPtr conn = std::move(idle_.back());
    idle_.pop_back();
    if (now - conn->idle_since < idle_timeout_ && idleConnectionAlive(*conn)) {
      reused = true;
      co_return conn;
    }
    conn->close();
  }
  co_return co_await connect();
}

void UpstreamPool::release(UpstreamConnectionPtr conn) {
  if (max_idle_ == 0) {
    conn->close();
    return;
  }
  if (idle_.size() >= max_idle_) {
    idle_.front()->close();
    idle_.erase(idle_.begin());
  }
  conn->idle_since = clock_.now();
  idle_.push_back(std::move(conn));
}

void UpstreamPool::closeAll() {
  for (auto& conn : idle_) conn->close();
  idle_.clear();
}

asio::awaitable<UpstreamConnectionPtr> UpstreamPool::connect() {
  const UpstreamOptions& opts = upstream_.options();
  const std::string dial = fmt::format("dial tcp {}", upstream_.hostHeader());
  error_code ec;
  asio::ip::tcp::resolver resolver(ctx_);
  auto endpoints = co_await resolver.async_resolve(opts.host, std::to_string(opts.port), redirect_error(use_awaitable, ec));
  if (ec) {
    throw UpstreamFailure(Reason::ServiceUnavailable, "connect",
                          upstream_.reachError(fmt::format("dial tcp: lookup {}: {}", opts.host, lowerFirst(ec.message()))));
  }
  TcpStream tcp(ctx_);
  tcp.expires_after(opts.connect_timeout);
  co_await tcp.async_connect(endpoints, redirect_error(use_awaitable, ec));
  if (ec == beast::error::timeout) {
    throw UpstreamFailure(Reason::Timeout, "timeout", upstream_.reachError(dial + ": i/o timeout"));
  }
  if (ec) {
    throw UpstreamFailure(Reason::ServiceUnavailable, "connect",
                          upstream_.reachError(fmt::format("{}: connect: {}", dial, lowerFirst(ec.message()))));
  }
  tcp.socket().set_option(asio::ip::tcp::no_delay(true), ec);
  if (!upstream_.tls()) {
    tcp.expires_never();
    co_return std::make_shared<UpstreamConnection>(std::move(tcp));
  }

  auto conn = std::make_shared<UpstreamConnection>(std::move(tcp), *upstream_.tls());
  TlsStream& tls = std::get<1>(conn->stream);
  SSL* ssl = tls.native_handle();
  // The context checks the peer's name during the handshake (upstream_tls.h), so a
  // mismatch is reported as a verification error with its own text; SNI is per connection.
  const std::string& name = upstream::upstreamServerName(opts);
  if (!upstream::isIpLiteral(name)) SSL_set_tlsext_host_name(ssl, name.c_str());
  co_await tls.async_handshake(asio::ssl::stream_base::client, redirect_error(use_awaitable, ec));
  if (ec) {
    const long verify = SSL_get_verify_result(ssl);
    if (ec == beast::error::timeout) {
      throw UpstreamFailure(Reason::Timeout, "timeout", upstream_.reachError("net/http: TLS handshake timeout"));
    }
    if (verify != X509_V_OK) {
      throw UpstreamFailure(
          Reason::ServiceUnavailable, "tls",
          upstream_.reachError(fmt::format("tls: failed to verify certificate: x509: {}",
                                           X509_verify_cert_error_string(verify))));
    }
    throw UpstreamFailure(Reason::ServiceUnavailable, "tls", upstream_.reachError("tls: " + ec.message()));
  }
  conn->tcp().expires_never();
  co_return conn;
}

asio::awaitable<error_code> writeUpstream(UpstreamConnection& conn, const std::string& data,
                                          std::chrono::milliseconds timeout) {
  error_code ec;
  conn.tcp().expires_after(timeout);
  co_await conn.visit([&](auto& s) { return asio::async_write(s, asio::buffer(data), redirect_error(use_awaitable, ec)); });
  conn.tcp().expires_never();
  co_return ec;
}

asio::awaitable<error_code> writeUpstreamBody(UpstreamConnection& conn, const char* data, size_t n, bool chunked,
                                              std::chrono::milliseconds timeout) {
  error_code ec;
  const ChunkSizeLine size_line(n);
  std::array<asio::const_buffer, 3> framed = {asio::buffer(size_line.view()), asio::buffer(data, n),
                                              asio::buffer(kChunkEnd)};
  conn.tcp().expires_after(timeout);
  if (chunked) {
    co_await conn.visit([&](auto& s) { return asio::async_write(s, framed, redirect_error(use_awaitable, ec)); });
  } else {
    co_await conn.visit([&](auto& s) { return asio::async_write(s, asio::buffer(data, n), redirect_error(use_awaitable, ec)); });
  }
  conn.tcp().expires_never();
  co_return ec;
}

asio::awaitable<UpstreamReply> callUpstream(UpstreamPool& pool, const std::string& method, const std::string& path,
                                            const std::string& body, std::chrono::milliseconds timeout,
                                            size_t max_body, const ServerOptions& options, const std::string& accept) {
  Upstream& upstream = pool.upstream();
  HeaderList fields = {{"User-Agent", "kube-cache-proxy"}};
  if (!accept.empty()) fields.emplace_back("Accept", accept);  // none: the apiserver's default
  if (!body.empty()) fields.emplace_back("Content-Type", "application/json");
  const HeaderList headers = filterRequestHeaders(fields, {upstream.hostHeader(), upstream.bearerToken(), ""});
  const std::string request =
      formatRequestHead(method, upstream.options().path_prefix + path, headers,
                        body.empty() ? BodyFraming::None : BodyFraming::ContentLength, body.size()) +
      body;
  auto fail = [&](const error_code& ec) {
    return UpstreamFailure(ec == beast::error::timeout ? Reason::Timeout : Reason::ServiceUnavailable,
                           ec == beast::error::timeout ? "timeout" : "io", upstream.reachError(ec.message()));
  };
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    UpstreamConnectionPtr conn = co_await pool.acquire(attempt == 0, reused);
    error_code ec;
    conn->tcp().expires_after(timeout);
    co_await conn->visit([&](auto& s) { return asio::async_write(s, asio::buffer(request), redirect_error(use_awaitable, ec)); });
    UpstreamParser rp;
    rp.header_limit(static_cast<uint32_t>(options.max_header_bytes));
    rp.body_limit(max_body);
    if (!ec) {
      co_await conn->visit([&](auto& s) { return http::async_read_header(s, conn->buffer, rp, redirect_error(use_awaitable, ec)); });
    }
    if (ec) {
      conn->close();
      if (reused && attempt == 0) continue;  // a pooled connection the upstream had closed
      throw fail(ec);
    }
    UpstreamReply reply;
    std::vector<char> buf(16 * 1024);
    while (!rp.is_done() && !ec) {
      rp.setBodyBuffer(buf.data(), buf.size());
      co_await conn->visit([&](auto& s) { return http::async_read_some(s, conn->buffer, rp, redirect_error(use_awaitable, ec)); });
      if (ec == http::error::need_buffer) ec = {};
      reply.body.append(buf.data(), rp.bodyUsed());
    }
    conn->tcp().expires_never();
    if (ec) {
      conn->close();
      throw fail(ec);
    }
    if (rp.keep_alive()) {
      pool.release(std::move(conn));
    } else {
      conn->close();
    }
    reply.code = rp.status;
    reply.headers = std::move(rp.headers);
    co_return reply;
  }
}

}  // namespace proxy::io
