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
#include "proxy/cache_serving.h"
#include "proxy/chunk_writer.h"
#include "proxy/client_watch.h"
#include "proxy/live_watch.h"
#include "proxy/proxy_metrics.h"
#include "proxy/read_route.h"
#include "proxy/status_negotiation.h"
#include "proxy/watch_request.h"
#include "watch/cache_watcher.h"
#include "watch/cached_resource.h"
#include "watch/event_encoder.h"
#include "watch/upstream_health.h"
#include "watch/watch_dispatcher.h"

namespace proxy::io {
namespace {

using asio::redirect_error;
using asio::use_awaitable;
using Clock = cache::Clock;

constexpr size_t kReplayBatch = 256;
constexpr size_t kFlushBytes = 64 * 1024;
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

std::string watchResponseHead(bool keep_alive, const watch::FrameEncoder& encoder) {
  // W2: exactly the apiserver's watch content type (JSON, or protobuf with
  // ";stream=watch"), chunked, never compressed; the served-by header tells operators the
  // stream is the cache's, as for cached reads.
  const HeaderList headers = {{"Cache-Control", "no-cache, private"},
                              {"Content-Type", std::string(encoder.contentType())},
                              {kServedByHeader, "cache"}};
  return formatResponseHead(200, "", headers, BodyFraming::Chunked, 0, keep_alive);
}

// The frame `event` becomes for this watch, or "" when it sends nothing (W10).
std::string replayFrame(const watch::FrameEncoder& encoder, bool metadata_only, const watch::WatchFilter& filter,
                        const cache::WatchEvent& event) {
  const auto delivery = filter.convert(event);
  if (!delivery) return {};
  if (delivery->source == watch::DeliverySource::PreviousAtEvent) {
    return encoder.event(delivery->type, *event.prev_object->withResourceVersion(event.resource_version),
                         metadata_only);
  }
  return encoder.event(delivery->type, *event.object, metadata_only);
}

// W5: 200 with one ERROR event carrying `status`, then the end of the stream.
asio::awaitable<ForwardOutcome> answerErrorEvent(DownstreamRequest& req, const watch::FrameEncoder& encoder,
                                                 const cache::Status& status, bool keep, const ServerOptions& options) {
  ChunkWriter out(req.stream, options.write_timeout);
  co_await writeDownstream(req.stream, watchResponseHead(keep, encoder), options.write_timeout);
  out.add(encoder.error(status));
  co_await out.flush();
  co_await writeDownstream(req.stream, "0\r\n\r\n", options.write_timeout);
  co_return ForwardOutcome{200, keep, true};
}

// Where a registered watcher starts: the initial state (`snapshot`), a replay of the
// history (`cursor`, up to `replay_through`), or now. `last_rv` is the stream's RV at
// that point.
struct WatchStart {
  watch::WatchDispatcher::RegistrationPtr registration;
  cache::SnapshotConstSharedPtr snapshot;
  std::optional<cache::HistoryCursor> cursor;
  uint64_t replay_through = 0;
  uint64_t last_rv = 0;
  bool raced = false;                  // the snapshot is older than the proof: pass through
  std::optional<std::string> expired;  // W5: the history no longer reaches from_rv, and why
};

// Registers `watcher` first, then reads the snapshot or history: the dispatcher
// guarantees that the two meet without a gap or an overlap.
WatchStart registerWatcher(watch::WatchDispatcher& dispatcher, const cache::ThreadSafeStore& store,
                           const std::shared_ptr<watch::CacheWatcher>& watcher, const WatchPlan& plan,
                           const std::optional<watch::Freshness>& proof) {
  WatchStart out;
  switch (plan.start) {
    case WatchPlan::Start::Snapshot: {
      auto start = dispatcher.registerWithSnapshot(watcher, proof ? proof->revision : 0);
      out.registration = std::move(start.registration);
      out.snapshot = std::move(start.snapshot);
      out.last_rv = out.snapshot->resourceVersion();
      if (proof) {
        if (!freshEnough(out.last_rv, *proof)) {
          out.raced = true;
          break;
        }
        // The initial state is the upstream's at the proven revision: the
        // initial-events-end bookmark says so, and nothing at or below it follows.
        out.last_rv = std::max(out.last_rv, proof->revision);
      }
      break;
    }
    case WatchPlan::Start::Resume: {
      auto start = dispatcher.registerAfter(watcher, plan.from_rv);
      out.registration = std::move(start.registration);
      out.replay_through = start.replay_through;
      out.last_rv = plan.from_rv;
      if (plan.from_rv < out.replay_through) {
        auto c = store.watchCursor(plan.from_rv);
        if (!c) {
          out.expired = c.error().message;
          break;
        }
        out.cursor = *c;
      }
      break;
    }
    case WatchPlan::Start::Now: {
      // RV unset: the changes after a revision read when the request arrived (C1).
      const uint64_t now_rv = std::max(store.currentRV(), proof ? proof->revision : 0);
      auto start = dispatcher.registerAfter(watcher, now_rv);
      out.registration = std::move(start.registration);
      out.last_rv = std::max(now_rv, start.replay_through);
      break;
    }
  }
  return out;
}

// W4/W9: the current state as ADDED events in key order, each at its own RV.
asio::awaitable<void> sendInitialState(ChunkWriter& out, const cache::Snapshot& snapshot, const WatchPlan& plan,
                                       const watch::FrameEncoder& encoder, bool metadata_only,
                                       const watch::BookmarkEncoder& bookmarks, uint64_t last_rv,
                                       uint64_t& events_sent) {
  cache::ListRequest list;
  list.namespace_name = plan.filter.namespaceScope();
  list.predicate = [&plan](const cache::Object& o) { return plan.filter.matches(o); };
  for (const auto& object : snapshot.list(list).items) {
    out.add(encoder.event(cache::EventType::Added, *object, metadata_only));
    ++events_sent;
    if (out.bytes() >= kFlushBytes) co_await out.flush();
  }
  if (plan.initial_events_end) {
    out.add(bookmarks.frame(last_rv, true));
    ++events_sent;
  }
  co_await out.flush();
}

// W4 RV=N: the history after N up to where live delivery starts (`replay_through`).
asio::awaitable<void> replayHistory(ChunkWriter& out, const cache::ThreadSafeStore& store, cache::HistoryCursor& cursor,
                                    uint64_t replay_through, const watch::FrameEncoder& encoder, bool metadata_only,
                                    const watch::WatchFilter& filter,
                                    watch::CacheWatcher& watcher, uint64_t& last_rv, uint64_t& events_sent) {
  std::vector<cache::WatchEvent> events;
  bool done = false;
  while (!done) {
    events.clear();
    if (!store.readEvents(cursor, kReplayBatch, events)) {
      // Evicted while we read: end silently (W6); the client resumes and learns 410.
      watcher.close(watch::CacheWatcher::CloseReason::Stopped);
      break;
    }
    if (events.empty()) break;
    for (const auto& event : events) {
      if (event.resource_version > replay_through) {
        done = true;
        break;
      }
      std::string frame = replayFrame(encoder, metadata_only, filter, event);
      if (frame.empty()) continue;
      out.add(std::move(frame));
      last_rv = event.resource_version;
      ++events_sent;
    }
    // A batch may end between events sharing an RV; that is harmless here because
    // the stream never ends during replay except when the client fails.
    co_await out.flush();
  }
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
    if (!live.out.empty()) {
      co_await live.out.flush();
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
      if (bookmark_rv > live.last_rv) {
        live.out.add(live.bookmarks.frame(bookmark_rv));
        live.last_rv = bookmark_rv;
        ++live.events_sent;
      }
    }
    if (!live.out.empty()) continue;
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

// nullopt, before anything is written, when the state the watch would start from is not
// covered by `proof` (the store moved in between): the watch passes through.
asio::awaitable<std::optional<ForwardOutcome>> streamWatch(DownstreamRequest& req, CacheContext& ctx,
                                                           std::shared_ptr<watch::CachedResource> cached,
                                                           WatchPlan plan, std::optional<watch::Freshness> proof,
                                                           bool metadata_only) {
  const ServerOptions& options = ctx.options;
  SessionControl& control = ctx.control;
  const std::string resource_name = cached->resource().displayName();
  const watch::FrameEncoder& encoder = cached->dispatcher().encoder();
  const watch::BookmarkEncoder bookmarks(cached->resource(), encoder.encoding(), cached->dispatcher().bookmarkSample(),
                                         metadata_only);
  const cache::ThreadSafeStore& store = cached->store();
  const auto started = ctx.clock.now();
  const auto deadline = started + plan.lifetime;
  const bool keep = req.keep_alive && req.parser.is_done();

  // W9 at RV=N: serveCachedWatch proved the cache fresh enough, or (upstream down) waited
  // for it to reach N; still short of it, the watch gets one ERROR event (W5).
  if (!proof && plan.wait_for_rv && store.currentRV() < *plan.wait_for_rv) {
    if (!co_await awaitResourceVersion(ctx.clock, store, *plan.wait_for_rv, ctx.clock.now())) {
      co_return co_await answerErrorEvent(
          req, encoder, cache::tooLargeResourceVersionStatus(*plan.wait_for_rv, store.currentRV()), keep, options);
    }
  }

  auto executor = co_await asio::this_coro::executor;
  auto wake_timer = std::make_shared<asio::steady_timer>(executor);
  auto waker = std::make_shared<Waker>();
  waker->timer = wake_timer.get();
  WakerGuard waker_guard{waker};
  auto watcher = std::make_shared<watch::CacheWatcher>(
      plan.filter, watch::CacheWatcherOptions{options.watch_queue_capacity, plan.allow_bookmarks, metadata_only});
  LiveWatch live(req.stream, options.write_timeout, watcher, bookmarks);
  waker->live = &live;
  waker->stream = &req.stream;
  watcher->setWakeCallback([waker, hub = WakeHub::forThisThread(executor)] { wakeStream(waker, hub); });

  WatchStart start = registerWatcher(cached->dispatcher(), store, watcher, plan, proof);
  if (start.raced) {
    ctx.metrics.cachePassThrough(resource_name, "raced");
    co_return std::nullopt;
  }
  if (start.expired) {
    co_return co_await answerErrorEvent(req, encoder, expiredStatus(*start.expired), keep, options);
  }

  ctx.metrics.streamOpened();
  ctx.metrics.cachedWatchOpened(resource_name);
  control.streaming = true;
  // stop() and a client that leaves both wake the live phase through its timer.
  auto wake = [t = std::weak_ptr<asio::steady_timer>(wake_timer)] {
    if (auto timer = t.lock()) timer->cancel();
  };
  control.interrupt = wake;
  std::shared_ptr<ClientWatch> client;
  uint64_t events_sent = 0;
  std::exception_ptr failure;
  try {
    // W2: headers go out at once, before any event.
    co_await writeDownstream(req.stream, watchResponseHead(keep, encoder), options.write_timeout);
    client = startClientWatch(req.stream, req.buffer, wake);
    ChunkWriter out(req.stream, options.write_timeout);  // initial state and replay
    uint64_t last_rv = start.last_rv;
    if (start.snapshot) {
      co_await sendInitialState(out, *start.snapshot, plan, encoder, metadata_only, bookmarks, last_rv, events_sent);
      start.snapshot.reset();
    } else if (start.cursor) {
      co_await replayHistory(out, store, *start.cursor, start.replay_through, encoder, metadata_only, plan.filter,
                             *watcher, last_rv, events_sent);
    }
    live.last_rv = last_rv;
    live.events_sent = events_sent;
    req.stream.setSendBufferSize(kLiveSendBuffer);
    co_await streamLive(live, *wake_timer, *client, ctx, *cached, plan, started, deadline);
    if (!client->gone) co_await writeDownstream(req.stream, "0\r\n\r\n", options.write_timeout);
  } catch (...) {
    failure = std::current_exception();  // co_await is not allowed inside a handler
  }
  waker_guard.disarm();
  start.registration.reset();
  recordWatchEnd(ctx.metrics, resource_name, *watcher, std::max(events_sent, live.events_sent), req.client_ip);
  if (client) co_await endClientWatch(*client, req.stream);
  control.interrupt = nullptr;
  control.streaming = false;
  if (failure) std::rethrow_exception(failure);
  co_return ForwardOutcome{200, keep && !client->gone && !control.stopping, true};
}

// The cache a watch streams from, or null (the watch passes through): a protobuf watch
// streams from the protobuf cache, once synced and holding the shape of the type's
// protobuf bookmarks; meanwhile a JSON cache answers a client that accepts JSON too, as
// before there was one (none is started for it: a second upstream watch).
asio::awaitable<std::shared_ptr<watch::CachedResource>> watchCacheFor(CacheContext& ctx, const RequestInfo& info,
                                                                      std::string_view accept, const WatchMedia& media) {
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
    co_await awaitStore(
        ctx.clock, [&] { return choose() || !starting(); }, ctx.clock.now() + ctx.options.cache_start_wait,
        std::chrono::milliseconds(5), std::chrono::milliseconds(50));
  }
  co_return cached;
}

}  // namespace

asio::awaitable<std::optional<ForwardOutcome>> serveCachedWatch(DownstreamRequest& req, CacheContext& ctx) {
  const RequestInfo& info = req.info;
  // Served by the upstream: a named watch path (deprecated /watch/.../name form, W1),
  // HTTP/1.0 (no chunked framing), a request with a body, or a Table /
  // PartialObjectMetadata rendering (N3, N4).
  if (info.parts.size() > 1 || req.http10 || !req.parser.is_done()) co_return std::nullopt;
  const std::string_view accept = findHeader(req.headers, "Accept");
  const auto media = watchMedia(accept);
  if (!media) co_return std::nullopt;
  std::shared_ptr<watch::CachedResource> cached = co_await watchCacheFor(ctx, info, accept, *media);
  if (!cached || !cached->hasSynced()) co_return std::nullopt;
  if (!cached->namespaceScope().empty() && cached->namespaceScope() != info.namespace_) co_return std::nullopt;
  // A cluster-scoped resource under a namespace path is no route of the apiserver's (404).
  if (!cached->resource().namespaced && !info.namespace_.empty()) co_return std::nullopt;

  const size_t q = req.target.find('?');
  const std::string_view query = q == std::string::npos ? std::string_view() : std::string_view(req.target).substr(q + 1);
  auto planned = planWatch(query, info.namespace_, cached->resource(), ctx.options.watch_max_lifetime, randomUnit(),
                           info.watch_prefix);
  if (auto* answer = std::get_if<HttpAnswer>(&planned)) {
    // A protobuf client gets its Status in protobuf: the upstream's to write.
    if (statusEncodingFor(accept) == StatusEncoding::Protobuf) co_return std::nullopt;
    encodeStatus(*answer, statusEncodingFor(accept));
    const bool keep = req.keep_alive;
    co_await writeDownstream(req.stream, formatAnswer(*answer, keep), ctx.options.write_timeout);
    co_return ForwardOutcome{answer->code, keep, false};
  }
  cached->markUsed();
  WatchPlan& plan = std::get<WatchPlan>(planned);
  if (plan.ends_at_once) {
    // W8: the deadline passed before the stream began: 200, then the end, no event. (The
    // apiserver races its expired context against the first event; this is the answer
    // it gives when the context wins, the only one that needs no freshness proof.)
    const bool keep = req.keep_alive && req.parser.is_done();
    co_await writeDownstream(req.stream, watchResponseHead(keep, cached->dispatcher().encoder()) + "0\r\n\r\n",
                             ctx.options.write_timeout);
    co_return ForwardOutcome{200, keep, true};
  }
  const cache::ThreadSafeStore& store = cached->store();
  const std::string collection = collectionPath(info, info.namespace_);
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
      proof = co_await proveFresh(ctx, *cached, info.namespace_, collection, FreshnessNeed{std::nullopt, *plan.wait_for_rv});
      if (!proof) {
        ctx.metrics.cachePassThrough(cached->resource().displayName(), "unproven");
        co_return std::nullopt;
      }
    }
  } else if (plan.consistent) {
    // RV unset (W4, W9): the stream starts at a state at least as new as a revision read
    // after the request arrived (C1).
    proof = co_await proveFresh(ctx, *cached, info.namespace_, collection, FreshnessNeed{ctx.clock.now(), 0});
    if (!proof) {
      ctx.metrics.cachePassThrough(cached->resource().displayName(), "unproven");
      co_return std::nullopt;
    }
  }
  const bool metadata_only = media->metadata_only && cached->encoding() == cache::Encoding::Protobuf;
  co_return co_await streamWatch(req, ctx, std::move(cached), std::move(plan), proof, metadata_only);
}

}  // namespace proxy::io
