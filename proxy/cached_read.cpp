// GET and LIST answered from the cache: the event-loop side only (waiting, the upstream
// fence read, writing). The decisions are plain code with unit tests: read_route (cache
// or upstream), cached_list (which state, which page), list_writer (the bytes),
// read_status (the errors). docs/routing.md describes the whole path.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <optional>
#include <string>
#include <unordered_map>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "cache/query_values.h"
#include "cache/resource_version.h"
#include "proxy/cache_serving.h"
#include "proxy/cached_list.h"
#include "proxy/gzip_writer.h"
#include "proxy/list_writer.h"
#include "proxy/partial_object_metadata.h"
#include "proxy/read_route.h"
#include "proxy/read_status.h"
#include "proxy/status_negotiation.h"
#include "watch/cached_resource.h"
#include "watch/upstream_health.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;
using Clock = std::chrono::steady_clock;

// The apiserver's blockTimeout for an RV the cache has not reached (R7), used while the
// upstream is down; otherwise the catch-up wait before such a read passes through.
constexpr auto kResourceVersionWait = std::chrono::seconds(3);
constexpr auto kResourceVersionCatchUp = std::chrono::milliseconds(50);
// How long a consistent read waits for the cache to reach its fence before passing
// through. Changes committed before the fence reach the proxy's watch within
// milliseconds; a resource with no such changes reaches the fence only with the next
// upstream bookmark (up to a minute), so a longer wait would only delay requests that
// pass through anyway. The wait also ends once the cache has not moved for
// kFenceQuietWait: nothing is in flight for it then.
constexpr auto kFenceWait = std::chrono::milliseconds(250);
constexpr auto kFenceQuietWait = std::chrono::milliseconds(100);
constexpr auto kFenceTimeout = std::chrono::seconds(10);
constexpr size_t kFenceMaxBody = 4 << 20;
// Bytes compressed at a time when streaming a gzipped list.
constexpr size_t kPieceBytes = 256 * 1024;
// Buffers handed to one sendmsg when streaming a list as it is stored (the kernel's
// limit; Asio's own gather writes stop at 64).
constexpr size_t kMaxSlices = IOV_MAX;

template <class F>
auto onUpstream(UpstreamConnection& conn, F&& f) {
  return std::visit(std::forward<F>(f), conn.stream);
}

std::optional<uint64_t> listResourceVersion(const std::string& body) {
  simdjson::padded_string padded(body);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS) return std::nullopt;
  std::string_view rv;
  if (doc["metadata"]["resourceVersion"].get_string().get(rv) != simdjson::SUCCESS) return std::nullopt;
  const auto parsed = cache::ResourceVersion::parse(rv);
  if (!parsed) return std::nullopt;
  return parsed->value();
}

// C3: `GET <collection>?limit=1` with the proxy's own credentials. Its list RV is at
// least the quorum revision when it was sent, so any answer from a cache state at or
// after it satisfies C1. nullopt when the upstream did not answer 200.
asio::awaitable<std::optional<uint64_t>> fenceRead(UpstreamPool& pool, const std::string& collection,
                                                   const ServerOptions& options) {
  Upstream& upstream = pool.upstream();
  const HeaderList headers = filterRequestHeaders({{"Accept", "application/json"}, {"User-Agent", "kube-cache-proxy"}},
                                                  {upstream.hostHeader(), upstream.bearerToken(), ""});
  const std::string head = formatRequestHead("GET", upstream.options().path_prefix + collection + "?limit=1", headers,
                                             BodyFraming::None, 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = false;
    UpstreamConnectionPtr conn;
    try {
      conn = co_await pool.acquire(attempt == 0, reused);
    } catch (const UpstreamFailure& failure) {
      spdlog::debug("fence read for {}: {}", collection, failure.what());
      if (auto* health = upstream.health()) health->failed(failure.what());
      co_return std::nullopt;
    }
    error_code ec;
    conn->tcp().expires_after(kFenceTimeout);
    co_await onUpstream(*conn, [&](auto& s) { return asio::async_write(s, asio::buffer(head), redirect_error(use_awaitable, ec)); });
    UpstreamParser rp;
    rp.header_limit(static_cast<uint32_t>(options.max_header_bytes));
    rp.body_limit(kFenceMaxBody);
    if (!ec) {
      co_await onUpstream(*conn, [&](auto& s) { return http::async_read_header(s, conn->buffer, rp, redirect_error(use_awaitable, ec)); });
    }
    if (ec) {
      conn->close();
      if (reused) continue;  // a pooled connection the upstream had closed
      if (auto* health = upstream.health()) health->failed(upstream.reachError(ec.message()));
      co_return std::nullopt;
    }
    if (auto* health = upstream.health()) health->answered();
    std::string body;
    std::vector<char> buf(16 * 1024);
    while (!rp.is_done() && !ec) {
      rp.setBodyBuffer(buf.data(), buf.size());
      co_await onUpstream(*conn, [&](auto& s) { return http::async_read_some(s, conn->buffer, rp, redirect_error(use_awaitable, ec)); });
      if (ec == http::error::need_buffer) ec = {};
      body.append(buf.data(), rp.bodyUsed());
    }
    conn->tcp().expires_never();
    if (ec) {
      conn->close();
      co_return std::nullopt;
    }
    if (rp.keep_alive()) {
      pool.release(std::move(conn));
    } else {
      conn->close();
    }
    if (rp.status != 200) co_return std::nullopt;
    co_return listResourceVersion(body);
  }
  co_return std::nullopt;
}

// Per io thread: the store RV at which a resource last missed its fence. While the
// store stays there, a new fence (never older than the last one) would miss again, so
// consistent reads pass through at once instead of paying a fence read and a wait.
// Keyed by store address; a stale entry only costs a pass-through or a fence (both safe).
std::unordered_map<const cache::ThreadSafeStore*, uint64_t>& fenceMisses() {
  thread_local std::unordered_map<const cache::ThreadSafeStore*, uint64_t> misses;
  return misses;
}

HeaderList answerHeaders(uint64_t rv) {
  return {{"Cache-Control", "no-cache, private"},
          {"Content-Type", "application/json"},
          {kServedByHeader, fmt::format("cache; rv={}", rv)}};
}

bool keepConnection(const DownstreamRequest& req, const CacheContext& ctx) {
  return req.keep_alive && req.parser.is_done() && !ctx.control.stopping;
}

// `may_gzip` is false for what the apiserver writes past its serializer (WriteRawJSON),
// which never compresses.
asio::awaitable<ForwardOutcome> writeWhole(DownstreamRequest& req, CacheContext& ctx, unsigned code, std::string body,
                                           uint64_t rv, int retry_after_seconds = 0, bool may_gzip = true) {
  const bool keep = keepConnection(req, ctx);
  HeaderList headers = answerHeaders(rv);
  if (retry_after_seconds > 0) headers.emplace_back("Retry-After", std::to_string(retry_after_seconds));
  if (may_gzip && body.size() >= kGzipThresholdBytes && acceptsGzip(findHeader(req.headers, "Accept-Encoding"))) {
    std::string compressed;
    GzipWriter().write(body, compressed, true);
    body = std::move(compressed);
    headers.emplace_back("Content-Encoding", "gzip");
  }
  std::string out = formatResponseHead(code, "", headers, BodyFraming::ContentLength, body.size(), keep);
  out += body;
  co_await writeDownstream(req.stream, out, ctx.options.write_timeout);
  co_return ForwardOutcome{code, keep, false};
}

asio::awaitable<ForwardOutcome> writeStatus(DownstreamRequest& req, CacheContext& ctx, const ApiStatus& status,
                                            uint64_t rv) {
  const StatusEncoding encoding = statusEncodingFor(findHeader(req.headers, "Accept"));
  HttpAnswer answer = toHttpAnswer(status, encoding);
  co_return co_await writeWhole(req, ctx, answer.code, std::move(answer.body), rv, answer.retry_after_seconds,
                                encoding == StatusEncoding::Negotiated);
}

// Writes every byte of `slices` to the client with sendmsg, up to kMaxSlices buffers
// per call, straight from where the bytes are (no copy in user space). The socket is
// non-blocking; when the kernel's send buffer is full, one Asio write of the next
// bytes waits for room (bounded by `timeout`) and the loop goes on. Throws on failure.
asio::awaitable<void> gatherWrite(DownstreamStream& downstream, const std::vector<std::string_view>& slices,
                                  std::chrono::milliseconds timeout) {
  if (downstream.tls()) {
    // TLS encrypts in user space anyway: one buffer-sequence write through the stream.
    std::vector<asio::const_buffer> buffers;
    buffers.reserve(slices.size());
    for (std::string_view s : slices) buffers.push_back(asio::buffer(s.data(), s.size()));
    downstream.expires_after(timeout);
    co_await asio::async_write(downstream, buffers, use_awaitable);
    downstream.expires_never();
    co_return;
  }
  TcpStream& stream = downstream.tcp();
  auto& socket = stream.socket();
  if (!socket.native_non_blocking()) socket.native_non_blocking(true);
  std::vector<iovec> iov;
  iov.reserve(std::min(slices.size(), kMaxSlices));
  size_t first = 0;   // the first slice not completely written
  size_t offset = 0;  // bytes of slices[first] already written
  while (true) {
    while (first < slices.size() && slices[first].size() == offset) {  // done or empty slices
      ++first;
      offset = 0;
    }
    if (first == slices.size()) break;
    iov.clear();
    for (size_t i = first; i < slices.size() && iov.size() < kMaxSlices; ++i) {
      const std::string_view s = i == first ? slices[i].substr(offset) : slices[i];
      iov.push_back(iovec{const_cast<char*>(s.data()), s.size()});
    }
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = iov.size();
    ssize_t sent = ::sendmsg(socket.native_handle(), &msg, MSG_NOSIGNAL);
    if (sent > 0) downstream.countWritten(static_cast<size_t>(sent));
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        throw boost::system::system_error(error_code(errno, boost::system::system_category()));
      }
      stream.expires_after(timeout);
      sent = static_cast<ssize_t>(co_await stream.async_write_some(
          asio::buffer(slices[first].data() + offset, slices[first].size() - offset), use_awaitable));
      stream.expires_never();
    }
    // Advance past what was sent.
    size_t n = static_cast<size_t>(sent);
    while (n > 0) {
      const size_t left = slices[first].size() - offset;
      if (n < left) {
        offset += n;
        break;
      }
      n -= left;
      ++first;
      offset = 0;
    }
  }
}

// Streams a list: Content-Length when sent as is, gathered from the stored bytes;
// chunked pieces when gzipped (N1).
asio::awaitable<ForwardOutcome> writeList(DownstreamRequest& req, CacheContext& ctx, ListWriter& writer, uint64_t rv) {
  const bool keep = keepConnection(req, ctx);
  const auto timeout = ctx.options.write_timeout;
  const bool gzip = !req.http10 && writer.totalSize() >= kGzipThresholdBytes &&
                    acceptsGzip(findHeader(req.headers, "Accept-Encoding"));
  HeaderList headers = answerHeaders(rv);
  if (!gzip) {
    const std::string head = formatResponseHead(200, "", headers, BodyFraming::ContentLength, writer.totalSize(), keep);
    std::vector<std::string_view> slices;
    slices.reserve(kMaxSlices);
    slices.push_back(head);  // the head and the first items in one call
    while (writer.nextSlices(slices, kMaxSlices)) {
      co_await gatherWrite(req.stream, slices, timeout);
      slices.clear();
    }
    co_return ForwardOutcome{200, keep, false};
  }
  std::string piece;
  headers.emplace_back("Content-Encoding", "gzip");
  co_await writeDownstream(req.stream, formatResponseHead(200, "", headers, BodyFraming::Chunked, 0, keep), timeout);
  GzipWriter gz;
  std::string compressed;
  while (true) {
    const bool more = writer.next(piece, kPieceBytes);
    compressed.clear();
    gz.write(piece, compressed, !more);
    if (!compressed.empty()) {
      std::string chunk = fmt::format("{:x}\r\n", compressed.size());
      chunk += compressed;
      chunk += "\r\n";
      co_await writeDownstream(req.stream, chunk, timeout);
    }
    if (!more) break;
  }
  co_await writeDownstream(req.stream, "0\r\n\r\n", timeout);
  co_return ForwardOutcome{200, keep, false};
}

asio::awaitable<std::optional<ForwardOutcome>> serveList(DownstreamRequest& req, CacheContext& ctx,
                                                         const watch::CachedResource& cached, const ReadRoute& route,
                                                         std::string_view raw_query) {
  const watch::ApiResource& resource = cached.resource();
  const cache::ThreadSafeStore& store = cached.store();
  const auto parsed = cache::ListOptions::parse(raw_query, *resource.field_spec);
  if (!parsed) co_return co_await writeStatus(req, ctx, listOptionsStatus(parsed.error()), store.currentRV());
  const cache::ListOptions& options = *parsed;
  const std::string_view ns = storeNamespace(req.info, resource);
  const ListPlan plan = planList(options, ns, resource.namespaced);

  std::optional<ListResult> result;
  switch (plan.read) {
    case ListPlan::Read::PassThrough: co_return std::nullopt;
    case ListPlan::Read::Consistent:
      if (!co_await awaitConsistency(ctx, cached, collectionPath(req.info, ns))) co_return std::nullopt;
      result = listCurrent(store, options, ns, plan);
      break;
    case ListPlan::Read::Current: result = listCurrent(store, options, ns, plan); break;
    case ListPlan::Read::NotOlderThan:
    case ListPlan::Read::Exact: {
      switch (co_await awaitResourceVersionOrPassThrough(ctx, store, plan.rv)) {
        case ResourceVersionWait::Reached: break;
        case ResourceVersionWait::PassThrough: co_return std::nullopt;
        case ResourceVersionWait::TooLarge:
          co_return co_await writeStatus(req, ctx, tooLargeResourceVersionStatus(plan.rv, store.currentRV()),
                                         store.currentRV());
      }
      if (plan.read == ListPlan::Read::NotOlderThan) {
        result = listCurrent(store, options, ns, plan);
        break;
      }
      auto snapshot = store.snapshotAt(plan.rv);
      // Outside the history window: the upstream may still serve it from etcd, and
      // otherwise answers with its own 410 (R8, P7 with the fresh token).
      if (!snapshot) co_return std::nullopt;
      result = listSnapshot(**snapshot, options, ns, plan);
      break;
    }
  }

  ListEnvelope envelope;
  ItemForm form = resource.custom ? ItemForm::AsStored : ItemForm::WithoutTypeMeta;
  if (route.format == ReadFormat::PartialObjectMetadataList) {
    envelope.kind = "PartialObjectMetadataList";
    envelope.api_version = "meta.k8s.io/v1";
    form = resource.custom ? ItemForm::CustomPartialObjectMetadata : ItemForm::PartialObjectMetadata;
  } else {
    envelope.kind = resource.list_kind.empty() ? resource.kind + "List" : resource.list_kind;
    envelope.api_version = resource.apiVersion();
  }
  envelope.unstructured = resource.custom && form == ItemForm::AsStored;
  envelope.resource_version = result->resource_version;
  envelope.continue_token = std::move(result->continue_token);
  envelope.remaining_item_count = result->remaining_item_count;
  ListWriter writer(std::move(envelope), std::move(result->items), form);
  co_return co_await writeList(req, ctx, writer, result->resource_version);
}

asio::awaitable<std::optional<ForwardOutcome>> serveGet(DownstreamRequest& req, CacheContext& ctx,
                                                        const watch::CachedResource& cached, const ReadRoute& route,
                                                        const cache::QueryValues& query) {
  const watch::ApiResource& resource = cached.resource();
  const cache::ThreadSafeStore& store = cached.store();
  const std::string_view ns = storeNamespace(req.info, resource);
  const std::optional<std::string_view> rv_param = query.get("resourceVersion");
  if (!rv_param || rv_param->empty()) {
    // RV unset is a quorum read upstream (R2): served only when proven fresh (C1).
    if (!co_await awaitConsistency(ctx, cached, collectionPath(req.info, ns))) co_return std::nullopt;
  } else {
    const auto rv = cache::ResourceVersion::parse(*rv_param);
    if (!rv) co_return std::nullopt;  // R6: the upstream's own quirky answer
    if (!rv->isZero()) {
      switch (co_await awaitResourceVersionOrPassThrough(ctx, store, rv->value())) {
        case ResourceVersionWait::Reached: break;
        case ResourceVersionWait::PassThrough: co_return std::nullopt;
        case ResourceVersionWait::TooLarge:
          co_return co_await writeStatus(req, ctx, tooLargeResourceVersionStatus(rv->value(), store.currentRV()),
                                         store.currentRV());
      }
    }
  }
  const uint64_t at = store.currentRV();
  const cache::ObjectConstSharedPtr object = store.get(cache::makeKey(ns, req.info.name));
  if (!object) co_return co_await writeStatus(req, ctx, notFoundStatus(resource, req.info.name), at);
  std::string body;
  if (route.format == ReadFormat::PartialObjectMetadata) {
    body = partialObjectMetadata(*object, resource.custom);
  } else {
    body.reserve(object->json().size() + 1);
    body += object->json();
    body += '\n';  // Go's encoder ends every body with a newline
  }
  co_return co_await writeWhole(req, ctx, 200, std::move(body), at);
}

}  // namespace

std::string collectionPath(const RequestInfo& info, std::string_view ns) {
  std::string path = "/" + info.api_prefix;
  if (!info.api_group.empty()) path += "/" + info.api_group;
  path += "/" + info.api_version;
  if (!ns.empty()) path += "/namespaces/" + std::string(ns);
  path += "/" + info.resource;
  return path;
}

asio::awaitable<ResourceVersionWait> awaitResourceVersionOrPassThrough(CacheContext& ctx,
                                                                       const cache::ThreadSafeStore& store,
                                                                       uint64_t rv) {
  const auto* health = ctx.pool.upstream().health();
  const bool upstream_down = health && !health->up();
  const auto wait = upstream_down ? std::chrono::duration_cast<std::chrono::milliseconds>(kResourceVersionWait)
                                  : kResourceVersionCatchUp;
  if (co_await awaitResourceVersion(store, rv, Clock::now() + wait)) co_return ResourceVersionWait::Reached;
  co_return upstream_down ? ResourceVersionWait::TooLarge : ResourceVersionWait::PassThrough;
}

asio::awaitable<bool> awaitConsistency(CacheContext& ctx, const watch::CachedResource& cached,
                                       const std::string& collection) {
  const cache::ThreadSafeStore& store = cached.store();
  // While the upstream is down no fence can be read: the request passes through and fails
  // fast with a 503 (docs/routing.md, "Upstream outage").
  if (const auto* health = ctx.pool.upstream().health(); health && !health->up()) co_return false;
  auto& misses = fenceMisses();
  if (auto it = misses.find(&store); it != misses.end() && it->second == store.currentRV()) co_return false;
  const std::optional<uint64_t> fence = co_await fenceRead(ctx.pool, collection, ctx.options);
  if (!fence) co_return false;
  const auto deadline = Clock::now() + kFenceWait;
  while (true) {
    const uint64_t before = store.currentRV();
    if (co_await awaitResourceVersion(store, *fence, std::min(deadline, Clock::now() + kFenceQuietWait))) {
      misses.erase(&store);
      co_return true;
    }
    const uint64_t now_at = store.currentRV();
    if (now_at == before || Clock::now() >= deadline) {
      spdlog::debug("{}: cache at {} did not reach fence {}", collection, now_at, *fence);
      if (misses.size() > 4096) misses.clear();
      misses[&store] = now_at;
      co_return false;
    }
  }
}


asio::awaitable<std::optional<ForwardOutcome>> serveCachedRead(DownstreamRequest& req, CacheContext& ctx) {
  if (req.method != "GET") co_return std::nullopt;  // HEAD and friends pass through
  const RequestInfo& info = req.info;
  const bool is_list = info.verb == "list";
  // GET /api/v1/namespaces/<n> is the cluster-scoped namespace object <n>.
  const bool namespace_object = !is_list && info.api_group.empty() && info.resource == "namespaces";
  std::shared_ptr<watch::CachedResource> cached =
      ctx.registry.find(info.api_group, info.api_version, info.resource, namespace_object ? "" : info.namespace_);
  CachedFacts facts;
  if (cached) {
    facts.resource = &cached->resource();
    facts.synced = cached->hasSynced();
    facts.namespace_scope = cached->namespaceScope();
  }
  const size_t qmark = req.target.find('?');
  const std::string_view raw_query =
      qmark == std::string::npos ? std::string_view{} : std::string_view(req.target).substr(qmark + 1);
  const cache::QueryValues query = cache::QueryValues::parse(raw_query);
  const ReadRoute route =
      routeRead(info, query, findHeader(req.headers, "Accept"), findHeader(req.headers, "User-Agent"), facts);
  if (!route.from_cache) {
    if (cached) spdlog::debug("{} {} passes through: {}", req.method, req.target, route.why);
    co_return std::nullopt;
  }
  cached->markUsed();
  if (is_list) co_return co_await serveList(req, ctx, *cached, route, raw_query);
  co_return co_await serveGet(req, ctx, *cached, route, query);
}

}  // namespace proxy::io
