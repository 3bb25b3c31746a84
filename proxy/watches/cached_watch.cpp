// WATCH answered from the cache's event history and dispatcher (issue #6, contract
// W1-W11; docs/design/watch.md). The request is planned by plain code (watch_request.h);
// this file only streams: head, initial state or history replay, then the watcher's
// queue until the deadline, the client leaves, the watcher is closed, or the server stops.
#include <algorithm>
#include <random>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "proxy/answers.h"
#include "proxy/http/client_watch.h"
#include "proxy/http/gzip_writer.h"
#include "proxy/reads/cache_serving.h"
#include "proxy/watches/live_watch.h"
#include "proxy/watches/watch_start.h"
#include "proxy/observability/proxy_metrics.h"
#include "proxy/reads/read_route.h"
#include "proxy/status_negotiation.h"
#include "proxy/http/http1_stream.h"
#include "proxy/watches/watch_request.h"
#include "watch/fanout/cache_watcher.h"
#include "watch/cached_resource.h"
#include "watch/fanout/event_encoder.h"
#include "watch/upstream_health.h"
#include "watch/fanout/watch_dispatcher.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;
using Clock = cache::Clock;

constexpr auto kPreDeadlineBookmark = std::chrono::seconds(2);  // W7
// The socket send buffer of a live watch stream (the kernel doubles it for bookkeeping).
// Autotuning grows it to tcp_wmem's maximum (4 MiB by default) for a client that stops
// reading, and every event is then still copied into it: 500 stalled watchers held 790 MB
// of kernel memory and cost 4.7x the CPU of 1,000 readers. Capped, a stalled client
// blocks its stream within a few events, so it stops costing CPU and is closed by the
// queue bound or the write timeout. The initial state and replay, which can be large, are
// written before the cap.
constexpr int kLiveSendBuffer = 256 * 1024;

double randomUnit() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// W2: exactly the apiserver's watch content type (JSON, or protobuf with
// ";stream=watch"), streamed; a watch-list gzip'd as kube-apiserver 1.37 gzips it (its
// BeginStream adds Content-Encoding and Vary); the served-by header tells operators the
// stream is the cache's, as for cached reads.
ResponseHead watchHead(const watch::FrameEncoder& encoder, const EventStreamOptions& options) {
  ResponseHead head;
  head.headers = {{"Cache-Control", "no-cache, private"}, {"Content-Type", std::string(encoder.contentType())}};
  if (options.gzip) {
    head.headers.emplace_back("Content-Encoding", "gzip");
    head.headers.emplace_back("Vary", "Accept-Encoding");
  }
  head.headers.emplace_back(kServedByHeader, "cache");
  return head;
}

// How the events of this watch travel. kube-apiserver 1.37 (WatchListCompression, beta
// and on) gzips a watch-list (sendInitialEvents with bookmarks: isListWatchRequest) whose
// Accept-Encoding names gzip, whole gzip members per flush, and never a WebSocket; a
// sidecar's loopback client gets plain bytes unless --gzip-loopback, as for lists.
EventStreamOptions eventOptions(const Request& req, const ServerStream& out, const WatchPlan& plan,
                                const watch::FrameEncoder& encoder, const CacheContext& ctx) {
  EventStreamOptions options;
  options.binary = encoder.encoding() == cache::Encoding::Protobuf;
  options.gzip = plan.initial_events_end && out.protocol() != Protocol::WebSocket &&
                 mayGzip(req.header("Accept-Encoding"), req.client_ip, {ctx.options.gateway, ctx.options.gzip_loopback});
  return options;
}

// W5: 200 with one ERROR event carrying `status`, then the end of the stream.
asio::awaitable<ForwardOutcome> answerErrorEvent(ServerStream& out, const watch::FrameEncoder& encoder,
                                                 const EventStreamOptions& options, const cache::Status& status) {
  std::unique_ptr<EventWriter> events = co_await out.startEvents(watchHead(encoder, options), options);
  if (!events) co_return ForwardOutcome{out.refusedWith(), false};
  events->add(encoder.error(status));
  co_await events->end();
  co_return ForwardOutcome{200, true};
}

// The RV of a bookmark due now. Read before draining: every event at or below it is
// already queued (W7, W11). W7 with the freshest proven RV: when a probe proved the
// store's state to be the upstream's at a newer revision, the bookmark carries that
// revision (as the apiserver's do once its cache was brought forward), and the events
// below it that may still arrive (objects created and deleted again) are no longer this
// watch's.
uint64_t dueBookmarkRV(watch::CachedResource& cached, watch::CacheWatcher& watcher, const WatchPlan& plan) {
  watch::WatchDispatcher& dispatcher = cached.dispatcher();
  uint64_t bookmark_rv = dispatcher.lastRV();
  const uint64_t proven = cached.freshness().provenAt(plan.filter.namespaceScope(), bookmark_rv);
  if (proven > bookmark_rv && dispatcher.skipThrough(watcher, bookmark_rv, proven)) bookmark_rv = proven;
  return bookmark_rv;
}

// W7 on the apiserver's schedule (cacher.go, cache_watcher.go): a watcher that asked for
// bookmarks gets one every --watch-bookmark-interval and one 2 s before its deadline,
// busy or quiet, at the newest RV it has been sent everything up to: the dispatcher's
// (`due_rv`, read before the queue was taken) or its last event's, when events after that
// read were taken too (all events up to a queued event's RV are queued with it). Like the
// apiserver's it may repeat the RV of the last event or bookmark (never go below it), and
// it is sent only once past the RV the stream started at.
void addDueBookmark(LiveWatch& live, uint64_t due_rv) {
  const uint64_t rv = std::max(due_rv, live.last_rv);
  if (rv <= live.start_rv) return;
  live.out->add(live.bookmarks.frame(rv));
  live.last_rv = rv;
  ++live.events_sent;
}

// The live phase: the watcher's queue, and bookmarks when due (W7), until the deadline,
// the client leaves, the watcher is closed, or the server stops.
asio::awaitable<void> streamLive(LiveWatch& live, asio::steady_timer& wake_timer, const ClientWatch& client,
                                 CacheContext& ctx, watch::CachedResource& cached, const WatchPlan& plan,
                                 Clock::TimePoint started, Clock::TimePoint deadline) {
  const ServerOptions& options = ctx.options;
  auto next_bookmark = started + options.watch_bookmark_interval;
  bool pre_deadline_sent = false;
  while (!ctx.control.stopping && !client.gone) {
    // What a wake-up could not write completely goes first: the chunk is under way.
    if (!live.out->empty()) {
      co_await live.out->flush();
      continue;
    }
    const auto now = ctx.clock.now();
    if (now >= deadline) break;
    const bool pre_deadline = !pre_deadline_sent && now + kPreDeadlineBookmark >= deadline;
    const bool bookmark_due = plan.allow_bookmarks && (now >= next_bookmark || pre_deadline);
    const uint64_t bookmark_rv = bookmark_due ? dueBookmarkRV(cached, *live.watcher, plan) : 0;
    live.takeQueued();
    if (bookmark_due) {
      if (pre_deadline) pre_deadline_sent = true;
      next_bookmark = now + options.watch_bookmark_interval;
      addDueBookmark(live, bookmark_rv);
    }
    if (!live.out->empty()) continue;
    if (live.watcher->closeReason() != watch::CacheWatcher::CloseReason::Open) break;
    auto wake_at = deadline;
    if (plan.allow_bookmarks) {
      wake_at = std::min(wake_at, next_bookmark);
      if (!pre_deadline_sent) wake_at = std::min(wake_at, deadline - kPreDeadlineBookmark);
    }
    wake_timer.expires_at(wake_at);
    error_code ec;
    live.parked = true;
    co_await wake_timer.async_wait(redirect_error(use_awaitable, ec));
    live.parked = false;
  }
}

// Counts the watch's end and says why a slow client was dropped.
void recordWatchEnd(ProxyMetrics& metrics, const std::string& resource_name, const watch::CacheWatcher& watcher,
                    uint64_t events_sent, const std::string& client_ip) {
  if (watcher.closeReason() == watch::CacheWatcher::CloseReason::TooSlow) {
    metrics.cachedWatchTerminatedSlow(resource_name);
    spdlog::info("closed a watch of {} from {}: client too slow", resource_name, client_ip);
  }
  metrics.cachedWatchEventsSent(resource_name, events_sent);
  metrics.cachedWatchClosed(resource_name);
  metrics.streamClosed();
}

// What a registered watch streams, and what its live phase shares with wake-ups.
struct WatchStream {
  std::shared_ptr<asio::steady_timer> wake_timer;
  std::shared_ptr<Waker> waker;
  std::shared_ptr<watch::CacheWatcher> watcher;
  std::unique_ptr<LiveWatch> live;
};

WatchStream openWatcher(const asio::any_io_executor& executor, const WatchPlan& plan, const ServerOptions& options,
                        const watch::BookmarkEncoder& bookmarks, bool metadata_only) {
  WatchStream w;
  w.wake_timer = std::make_shared<asio::steady_timer>(executor);
  w.waker = std::make_shared<Waker>();
  w.waker->timer = w.wake_timer.get();
  w.watcher = std::make_shared<watch::CacheWatcher>(
      plan.filter, watch::CacheWatcherOptions{options.watch_queue_capacity, plan.allow_bookmarks, metadata_only});
  w.live = std::make_unique<LiveWatch>(w.watcher, bookmarks);
  w.waker->live = w.live.get();
  w.watcher->setWakeCallback([waker = w.waker, hub = WakeHub::forThisThread(executor)] { wakeStream(waker, hub); });
  return w;
}

// The stream itself: the head, the start (initial state or replay), the live phase, the
// end. Throws when the client cannot be written to.
asio::awaitable<void> writeWatch(ServerStream& out, EventStreamOptions options, CacheContext& ctx,
                                 watch::CachedResource& cached, const WatchPlan& plan, WatchStart& start,
                                 WatchStream& w, std::shared_ptr<ClientWatch>& client, bool metadata_only,
                                 uint64_t& events_sent) {
  const watch::FrameEncoder& encoder = cached.dispatcher().encoder();
  const auto started = ctx.clock.now();
  // W2: headers go out at once, before any event.
  std::unique_ptr<EventWriter> events = co_await out.startEvents(watchHead(encoder, options), options);
  if (!events) co_return;  // the protocol refused the stream (its answer is written)
  w.live->out = events.get();
  client = out.watchClient([t = std::weak_ptr<asio::steady_timer>(w.wake_timer)] {
    if (auto timer = t.lock()) timer->cancel();
  });
  uint64_t last_rv = start.last_rv;
  w.live->start_rv = start.last_rv;
  if (start.snapshot) {
    co_await sendInitialState(*events, *start.snapshot, plan, encoder, metadata_only, w.live->bookmarks, last_rv,
                              events_sent);
    start.snapshot.reset();
  } else if (start.cursor) {
    co_await replayHistory(*events, cached.store(), *start.cursor, start.replay_through, encoder, metadata_only,
                           plan.filter, *w.watcher, last_rv, events_sent);
  }
  w.live->last_rv = last_rv;
  w.live->events_sent = events_sent;
  out.limitSendBuffer(kLiveSendBuffer);
  co_await streamLive(*w.live, *w.wake_timer, *client, ctx, cached, plan, started, started + plan.lifetime);
  if (!client->gone) co_await events->end();
}

// nullopt, before anything is written, when the state the watch would start from is not
// covered by `proof` (the store moved in between): the watch passes through.
asio::awaitable<std::optional<ForwardOutcome>> streamWatch(const Request& req, ServerStream& out, CacheContext& ctx,
                                                           std::shared_ptr<watch::CachedResource> cached,
                                                           const WatchPlan& plan,
                                                           std::optional<watch::Freshness> proof, bool metadata_only) {
  SessionControl& control = ctx.control;
  const std::string resource_name = cached->resource().displayName();
  const watch::FrameEncoder& encoder = cached->dispatcher().encoder();
  const EventStreamOptions options = eventOptions(req, out, plan, encoder, ctx);
  const cache::ThreadSafeStore& store = cached->store();
  // W9 at RV=N: serveCachedWatch proved the cache fresh enough, or (upstream down) waited
  // for it to reach N; still short of it, the watch gets one ERROR event (W5).
  if (!proof && plan.wait_for_rv && store.currentRV() < *plan.wait_for_rv &&
      !co_await awaitResourceVersion(ctx.clock, store, *plan.wait_for_rv, ctx.clock.now())) {
    const cache::Status too_large = cache::tooLargeResourceVersionStatus(*plan.wait_for_rv, store.currentRV());
    co_return co_await answerErrorEvent(out, encoder, options, too_large);
  }
  const watch::BookmarkEncoder bookmarks(cached->resource(), encoder.encoding(), cached->dispatcher().bookmarkSample(),
                                         metadata_only);
  WatchStream w = openWatcher(co_await asio::this_coro::executor, plan, ctx.options, bookmarks, metadata_only);
  WakerGuard waker_guard{w.waker};
  WatchStart start = registerWatcher(cached->dispatcher(), store, w.watcher, plan, proof);
  if (start.raced) {
    ctx.metrics.cachePassThrough(resource_name, "raced");
    co_return std::nullopt;
  }
  if (start.expired) {
    const cache::Status expired = expiredStatus(*start.expired);
    co_return co_await answerErrorEvent(out, encoder, options, expired);
  }

  ctx.metrics.streamOpened();
  ctx.metrics.cachedWatchOpened(resource_name);
  control.streaming = true;
  // stop() and a client that leaves both wake the live phase through its timer.
  control.interrupt = [t = std::weak_ptr<asio::steady_timer>(w.wake_timer)] {
    if (auto timer = t.lock()) timer->cancel();
  };
  std::shared_ptr<ClientWatch> client;
  uint64_t events_sent = 0;
  std::exception_ptr failure;
  try {
    co_await writeWatch(out, options, ctx, *cached, plan, start, w, client, metadata_only, events_sent);
  } catch (...) {
    failure = std::current_exception();  // co_await is not allowed inside a handler
  }
  waker_guard.disarm();
  start.registration.reset();
  recordWatchEnd(ctx.metrics, resource_name, *w.watcher, std::max(events_sent, w.live->events_sent), req.client_ip);
  if (client) co_await out.endClientWatch(*client);
  control.interrupt = nullptr;
  control.streaming = false;
  if (failure) std::rethrow_exception(failure);
  if (!client) co_return ForwardOutcome{out.refusedWith(), false};
  if (client->gone) out.closeConnectionAfter();
  co_return ForwardOutcome{200, true};
}

// The cache a watch streams from, or null (the watch passes through): a protobuf watch
// streams from the protobuf cache, once synced and holding the shape of the type's
// protobuf bookmarks; meanwhile a JSON cache answers a client that accepts JSON too, as
// before there was one (none is started for it: a second upstream watch).
asio::awaitable<std::shared_ptr<watch::CachedResource>> watchCacheFor(CacheContext& ctx, const RequestInfo& info,
                                                                      const AcceptHeader& accept, const WatchMedia& media) {
  std::shared_ptr<watch::CachedResource> cached;
  const bool protobuf = media.encoding == cache::Encoding::Protobuf &&
                        ctx.registry.cacheableInProtobuf(info.api_group, info.api_version, info.resource);
  // A metadata watch has no JSON fallback here: the JSON form of its events is the upstream's.
  const bool json = !media.metadata_only && acceptsJsonWatch(accept);
  if (media.metadata_only && !protobuf) co_return nullptr;
  auto choose = [&] {
    cached.reset();
    if (protobuf) {
      cached = ctx.registry.find(info.api_group, info.api_version, info.resource, info.namespace_,
                                 cache::Encoding::Protobuf);
      if (cached && (!cached->hasSynced() || !cached->dispatcher().bookmarkSample())) cached.reset();
      if (!cached && json) {
        cached = ctx.registry.findRunning(info.api_group, info.api_version, info.resource, info.namespace_);
      }
    } else if (json) {
      cached = ctx.registry.find(info.api_group, info.api_version, info.resource, info.namespace_);
    }
    return cached && cached->hasSynced();
  };
  // --cache-start-wait: a watch whose cache is starting waits for its sync (read_route.h).
  auto starting = [&] {
    return (protobuf || json) && ctx.registry.starting(info.api_group, info.api_version, info.resource, info.namespace_,
                                                       protobuf ? cache::Encoding::Protobuf : cache::Encoding::Json);
  };
  if (!choose() && ctx.options.cache_start_wait.count() > 0 && starting()) {
    // Woken when an informer starts or stops, or the one found moves (syncs). `cached` is
    // reset by choose() when not synced: the running one is looked up for its signal.
    const std::function<ChangeSignals()> signals = [&] {
      auto running = ctx.registry.findRunning(info.api_group, info.api_version, info.resource, info.namespace_,
                                              protobuf ? cache::Encoding::Protobuf : cache::Encoding::Json);
      return ChangeSignals{ctx.registry.informersChanged(), running ? &running->store().changes() : nullptr};
    };
    const std::function<bool()> settled = [&] { return choose() || !starting(); };
    co_await awaitChange(ctx.clock, settled, signals, ctx.clock.now() + ctx.options.cache_start_wait, &ctx.client);
  }
  co_return cached;
}

}  // namespace

asio::awaitable<std::optional<ForwardOutcome>> serveCachedWatch(const Request& req, ServerStream& out,
                                                               CacheContext& ctx) {
  const RequestInfo& info = req.info;
  // Served by the upstream: a named watch path (deprecated /watch/.../name form, W1),
  // HTTP/1.0 (no chunked framing), a request with a body, or a Table /
  // PartialObjectMetadata rendering (N3, N4).
  const bool http10 = out.protocol() == Protocol::Http1 && static_cast<Http1Stream&>(out).http10();
  if (info.parts.size() > 1 || http10 || out.requestBodyPending()) co_return std::nullopt;
  const auto media = watchMedia(req.accept);
  if (!media) co_return std::nullopt;
  std::shared_ptr<watch::CachedResource> cached = co_await watchCacheFor(ctx, info, req.accept, *media);
  if (!cached || !cached->hasSynced()) co_return std::nullopt;
  if (!cached->namespaceScope().empty() && cached->namespaceScope() != info.namespace_) co_return std::nullopt;
  // A cluster-scoped resource under a namespace path is no route of the apiserver's (404).
  if (!cached->resource().namespaced && !info.namespace_.empty()) co_return std::nullopt;

  const std::string collection = collectionPath(info, info.namespace_);
  const std::optional<bool> shards_apply = co_await shardsApply(req, ctx, *cached, collection);
  if (!shards_apply) co_return std::nullopt;
  auto planned = planWatch(req.query, info.namespace_, cached->resource(), ctx.options.watch_max_lifetime, randomUnit(),
                           info.watch_prefix, *shards_apply);
  if (auto* answer = std::get_if<HttpAnswer>(&planned)) {
    // A protobuf client gets its Status in protobuf: the upstream's to write.
    const StatusEncoding encoding = statusEncodingFor(req.accept);
    if (encoding == StatusEncoding::Protobuf) co_return std::nullopt;
    encodeStatus(*answer, encoding);
    co_return ForwardOutcome{co_await writeAnswer(out, req, *answer), false};
  }
  cached->markUsed();
  WatchPlan& plan = std::get<WatchPlan>(planned);
  if (plan.ends_at_once) {
    // W8: the deadline passed before the stream began: 200, then the end, no event. (The
    // apiserver races its expired context against the first event; this is the answer
    // it gives when the context wins, the only one that needs no freshness proof.)
    const watch::FrameEncoder& encoder = cached->dispatcher().encoder();
    const EventStreamOptions options = eventOptions(req, out, plan, encoder, ctx);
    std::unique_ptr<EventWriter> events = co_await out.startEvents(watchHead(encoder, options), options);
    if (!events) co_return ForwardOutcome{out.refusedWith(), false};
    co_await events->end();
    co_return ForwardOutcome{200, true};
  }
  const cache::ThreadSafeStore& store = cached->store();
  std::optional<watch::Freshness> proof;
  const auto* health = ctx.pool.upstream().health();
  const bool upstream_down = health && !health->up();
  if (plan.wait_for_rv && store.currentRV() < *plan.wait_for_rv) {
    // W9 at RV=N beyond the cache: a state proven at N or later, else the upstream
    // answers (R7); while it is down, the apiserver's own wait and ERROR event.
    if (upstream_down) {
      if (co_await awaitResourceVersionOrPassThrough(ctx, store, *plan.wait_for_rv) ==
          ResourceVersionWait::PassThrough) {
        co_return std::nullopt;
      }
    } else {
      const FreshnessNeed need{std::nullopt, *plan.wait_for_rv, plan.start == WatchPlan::Start::Snapshot,
                               plan.filter.shard()};
      proof = co_await proveFresh(ctx, *cached, info.namespace_, collection, need);
      if (!proof) {
        ctx.metrics.cachePassThrough(cached->resource().displayName(), "unproven");
        co_return std::nullopt;
      }
    }
  } else if (plan.consistent) {
    // RV unset (W4, W9): the stream starts at a state at least as new as a revision read
    // after the request arrived (C1).
    // The initial state of a watch-list lists the scope, as a LIST does.
    // A shard's watch is proven by the shard's metadata, as its LIST is.
    const FreshnessNeed need{ctx.clock.now(), 0, plan.start == WatchPlan::Start::Snapshot, plan.filter.shard()};
    proof = co_await proveFresh(ctx, *cached, info.namespace_, collection, need);
    if (!proof) {
      ctx.metrics.cachePassThrough(cached->resource().displayName(), "unproven");
      co_return std::nullopt;
    }
  }
  const bool metadata_only = media->metadata_only && cached->encoding() == cache::Encoding::Protobuf;
  co_return co_await streamWatch(req, out, ctx, std::move(cached), plan, proof, metadata_only);
}

}  // namespace proxy::io
