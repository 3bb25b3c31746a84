// WATCH answered from the cache's event history and dispatcher (issue #6, contract
// W1-W11; docs/design/watch.md). The request is planned by plain code (watch_request.h);
// this file only streams: head, initial state or history replay, then the watcher's
// queue until the deadline, the client leaves, the watcher is closed, or the server stops.
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <charconv>
#include <mutex>
#include <random>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "proxy/cache_serving.h"
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
using Clock = std::chrono::steady_clock;

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

// The chunked body of one watch response: frames are gathered (shared ones are not
// copied) and written as one chunk, so a batch of events is one write. A chunk that a
// non-blocking write sent only in part keeps its place; nothing is added to it until the
// rest is out.
class ChunkWriter {
 public:
  // What the direct sends need is read once here, so a send touches no stream object
  // (at 10,000 watchers each of those is a cache miss per delivery).
  ChunkWriter(DownstreamStream& stream, std::chrono::milliseconds timeout)
      : stream_(stream),
        timeout_(timeout),
        fd_(stream.tls() ? -1 : stream.socket().native_handle()),
        client_(stream.tcp().rate_policy().client) {}
  ChunkWriter(const ChunkWriter&) = delete;
  ChunkWriter& operator=(const ChunkWriter&) = delete;

  void add(watch::FrameConstSharedPtr frame) {
    bytes_ += frame->size();
    pieces_.push_back(std::move(frame));
  }
  void add(std::string&& frame) { add(std::make_shared<const std::string>(std::move(frame))); }
  size_t bytes() const { return bytes_; }
  bool empty() const { return pieces_.empty(); }

  // One non-blocking sendmsg of what is left of the chunk (plain TCP only: TLS bytes must
  // go through the encryption). True when the whole chunk is out. A client that keeps up
  // has room in its socket buffer, so this skips the write timer and the completion post
  // of an async write, which at thousands of watchers per event are most of the
  // per-delivery cost. `ec` is set on a failure other than a full buffer.
  bool trySend(error_code& ec) {
    ec = {};
    if (pieces_.empty()) return true;
    if (fd_ < 0) return false;
    const auto& buffers = remaining();
    sys_iov_.resize(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      sys_iov_[i].iov_base = const_cast<void*>(buffers[i].data());
      sys_iov_[i].iov_len = buffers[i].size();
    }
    msghdr message{};
    message.msg_iov = sys_iov_.data();
    message.msg_iovlen = sys_iov_.size();
    ssize_t n = -1;
    do {
      n = ::sendmsg(fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) ec = error_code(errno, boost::system::system_category());
      return false;
    }
    sent_ += static_cast<size_t>(n);
    // Direct sends bypass the stream's rate policy: they count for the client here.
    if (client_ && n > 0) client_->bytesSent(static_cast<uint64_t>(n));
    if (sent_ < size_line_len_ + bytes_ + 2) return false;
    clear();
    return true;
  }

  // Writes the rest of the chunk; throws when the client cannot be written to.
  asio::awaitable<void> flush() {
    error_code ec;
    if (trySend(ec)) co_return;
    if (ec) throw boost::system::system_error(ec);
    stream_.expires_after(timeout_);
    co_await asio::async_write(stream_, remaining(), use_awaitable);
    stream_.expires_never();
    clear();
  }

 private:
  // The chunk's buffers after the `sent_` bytes already written. The size line is fixed
  // when the first byte goes out; the buffer list is reused (no allocation per event).
  const std::vector<asio::const_buffer>& remaining() {
    if (size_line_len_ == 0) {
      auto [end, ec] = std::to_chars(size_line_, size_line_ + sizeof size_line_ - 2, bytes_, 16);
      end[0] = '\r';
      end[1] = '\n';
      size_line_len_ = static_cast<size_t>(end + 2 - size_line_);
    }
    iov_.clear();
    size_t skip = sent_;
    auto push = [&](const void* data, size_t size) {
      if (skip >= size) {
        skip -= size;
        return;
      }
      iov_.push_back(asio::const_buffer(static_cast<const char*>(data) + skip, size - skip));
      skip = 0;
    };
    push(size_line_, size_line_len_);
    for (const auto& p : pieces_) push(p->data(), p->size());
    push("\r\n", 2);
    return iov_;
  }
  void clear() {
    pieces_.clear();
    bytes_ = 0;
    sent_ = 0;
    size_line_len_ = 0;
  }

  DownstreamStream& stream_;
  std::chrono::milliseconds timeout_;
  std::vector<watch::FrameConstSharedPtr> pieces_;
  size_t bytes_ = 0;
  const int fd_;                  // -1 for TLS: its bytes go through the stream
  ClientMetrics* const client_;   // the request's client bucket, or null
  char size_line_[24];            // hex size and CRLF, set when the chunk is first written
  size_t size_line_len_ = 0;      // 0: not yet set
  size_t sent_ = 0;               // bytes of this chunk already written
  std::vector<asio::const_buffer> iov_;
  std::vector<iovec> sys_iov_;
};

// What the stream coroutine and its wake-ups share on the stream's io thread (never
// touched from another thread): the writer, the watcher's queue and the stream's RV.
struct LiveWatch {
  LiveWatch(DownstreamStream& stream, std::chrono::milliseconds write_timeout, std::shared_ptr<watch::CacheWatcher> w,
            const watch::BookmarkEncoder& b)
      : out(stream, write_timeout), watcher(std::move(w)), bookmarks(b) {}

  // Moves the watcher's queue into `out`: frames as they are, bookmarks encoded when they
  // move the stream's RV forward (W7: never backwards).
  // Returns whether the watcher was still open when its queue was taken.
  watch::CacheWatcher::CloseReason takeQueued() {
    batch.clear();
    const auto state = watcher->takeAll(batch);
    for (auto& item : batch) {
      if (item.bookmark()) {
        if (item.resource_version > last_rv) {
          out.add(bookmarks.frame(item.resource_version));
          last_rv = item.resource_version;
          ++events_sent;
        }
        continue;
      }
      out.add(std::move(item.frame));
      last_rv = item.resource_version;
      ++events_sent;
    }
    return state;
  }

  // Called by a wake-up while the coroutine is parked: writes the queue without waking
  // it. False when the coroutine must run (a partial write, an error, a closed watcher);
  // what was taken stays in `out` for it.
  bool deliverInline() {
    if (!parked || !out.empty()) return false;
    if (takeQueued() != watch::CacheWatcher::CloseReason::Open) return false;
    error_code ec;
    return out.trySend(ec);
  }

  ChunkWriter out;
  std::shared_ptr<watch::CacheWatcher> watcher;
  const watch::BookmarkEncoder& bookmarks;
  std::vector<watch::QueuedFrame> batch;
  uint64_t last_rv = 0;
  uint64_t events_sent = 0;
  bool parked = false;  // the coroutine waits on its wake timer with nothing to write
};

// Wakes the stream's coroutine from the dispatcher's thread. Disarmed before the
// coroutine's io_context can go away, so a late dispatch never posts into it.
struct Waker {
  std::mutex mu;
  bool armed = true;  // guarded by mu: false once the dispatcher must not post any more

  // The rest is only touched on the stream's io thread. The pointers are into the
  // coroutine's frame and valid while `alive`, which the coroutine clears (WakerGuard)
  // before any of them goes away; plain pointers, not weak ones, because locking two
  // weak pointers was two cold control blocks per delivery.
  bool alive = true;
  asio::steady_timer* timer = nullptr;
  LiveWatch* live = nullptr;
  DownstreamStream* stream = nullptr;

  // A parked stream whose client keeps up gets its frames written here, with no timer
  // cancelled and re-armed and no coroutine resumed per event.
  void run() {
    if (!alive) return;
    if (live->deliverInline()) return;
    timer->cancel();
    // A watcher closed for being slow is usually stuck in a write to a client that does
    // not read: abort it, so its socket buffers and queue are freed now (W6).
    if (live->watcher->closeReason() == watch::CacheWatcher::CloseReason::TooSlow) stream->cancel();
  }
};

// One per io thread: the wake-ups of one dispatch (one event to thousands of watchers)
// become one post to the event loop instead of one each, which saves an eventfd write
// and a handler allocation per watcher.
class WakeHub : public std::enable_shared_from_this<WakeHub> {
 public:
  explicit WakeHub(asio::any_io_executor executor) : executor_(std::move(executor)) {}

  // The hub of the calling io thread.
  static std::shared_ptr<WakeHub> forThisThread(const asio::any_io_executor& executor) {
    thread_local std::shared_ptr<WakeHub> hub;
    if (!hub) hub = std::make_shared<WakeHub>(executor);
    return hub;
  }

  void wake(std::shared_ptr<Waker> waker) {
    std::lock_guard lock(mu_);
    pending_.push_back(std::move(waker));
    if (posted_) return;
    posted_ = true;
    asio::post(executor_, [self = shared_from_this()] { self->run(); });
  }

 private:
  void run() {
    std::vector<std::shared_ptr<Waker>> ready;
    {
      std::lock_guard lock(mu_);
      ready.swap(pending_);
      posted_ = false;
    }
    for (auto& waker : ready) waker->run();
  }

  asio::any_io_executor executor_;
  std::mutex mu_;
  bool posted_ = false;
  std::vector<std::shared_ptr<Waker>> pending_;
};

// The callback the dispatcher calls: queues `waker` on its io thread's hub unless the
// stream is over.
void wakeStream(const std::shared_ptr<Waker>& waker, const std::shared_ptr<WakeHub>& hub) {
  std::lock_guard lock(waker->mu);
  if (waker->armed) hub->wake(waker);
}

struct WakerGuard {
  std::shared_ptr<Waker> waker;
  // On the io thread, before the timer, the LiveWatch or the stream can go away.
  void disarm() {
    waker->alive = false;
    std::lock_guard lock(waker->mu);
    waker->armed = false;
  }
  ~WakerGuard() { disarm(); }
};

// Watches the client socket while the stream runs: a client sends nothing while it
// waits, so EOF or an error means it left (as Go's net/http cancels the request).
struct ClientWatch {
  bool gone = false;
  bool finished = false;
  std::shared_ptr<asio::steady_timer> done;
};

asio::awaitable<void> watchClient(DownstreamStream& stream, beast::flat_buffer& buffer, std::shared_ptr<ClientWatch> watch,
                                  std::weak_ptr<asio::steady_timer> wake_timer) {
  error_code ec;
  const size_t n = co_await stream.async_read_some_untimed(buffer.prepare(4096), redirect_error(use_awaitable, ec));
  buffer.commit(n);
  if (ec && ec != asio::error::operation_aborted) {
    watch->gone = true;
    if (auto timer = wake_timer.lock()) timer->cancel();
  }
}

std::string watchResponseHead(bool keep_alive) {
  // W2: exactly the apiserver's JSON watch content type, chunked, never compressed; the
  // served-by header tells operators the stream is the cache's, as for cached reads.
  const HeaderList headers = {
      {"Cache-Control", "no-cache, private"}, {"Content-Type", "application/json"}, {kServedByHeader, "cache"}};
  return formatResponseHead(200, "", headers, BodyFraming::Chunked, 0, keep_alive);
}

// The frame `event` becomes for this watch, or "" when it sends nothing (W10).
std::string replayFrame(const watch::WatchFilter& filter, const cache::WatchEvent& event) {
  const auto delivery = filter.convert(event);
  if (!delivery) return {};
  if (delivery->source == watch::DeliverySource::PreviousAtEvent) {
    return watch::encodeEvent(delivery->type, event.prev_object->withResourceVersion(event.resource_version)->json());
  }
  return watch::encodeEvent(delivery->type, event.object->json());
}

// nullopt, before anything is written, when the state the watch would start from is not
// covered by `proof` (the store moved in between): the watch passes through.
asio::awaitable<std::optional<ForwardOutcome>> streamWatch(DownstreamRequest& req, CacheContext& ctx,
                                                           std::shared_ptr<watch::CachedResource> cached,
                                                           WatchPlan plan, std::optional<watch::Freshness> proof) {
  const ServerOptions& options = ctx.options;
  SessionControl& control = ctx.control;
  const std::string resource_name = cached->resource().displayName();
  const watch::BookmarkEncoder bookmarks(cached->resource());
  watch::WatchDispatcher& dispatcher = cached->dispatcher();
  const cache::ThreadSafeStore& store = cached->store();
  const auto started = Clock::now();
  const auto deadline = started + plan.lifetime;
  const bool keep = req.keep_alive && req.parser.is_done();
  ChunkWriter out(req.stream, options.write_timeout);  // head, initial state and replay

  // W9 at RV=N: serveCachedWatch proved the cache fresh enough, or (upstream down) waited
  // for it to reach N; still short of it, the watch gets one ERROR event (W5).
  if (!proof && plan.wait_for_rv && store.currentRV() < *plan.wait_for_rv) {
    if (!co_await awaitResourceVersion(store, *plan.wait_for_rv, Clock::now())) {
      co_await writeDownstream(req.stream, watchResponseHead(keep), options.write_timeout);
      out.add(watch::encodeErrorEvent(cache::statusJson(cache::tooLargeResourceVersionStatus(*plan.wait_for_rv, store.currentRV()))));
      co_await out.flush();
      co_await writeDownstream(req.stream, "0\r\n\r\n", options.write_timeout);
      co_return ForwardOutcome{200, keep, true};
    }
  }

  auto executor = co_await asio::this_coro::executor;
  auto wake_timer = std::make_shared<asio::steady_timer>(executor);
  auto waker = std::make_shared<Waker>();
  waker->timer = wake_timer.get();
  WakerGuard waker_guard{waker};
  auto watcher = std::make_shared<watch::CacheWatcher>(
      plan.filter, watch::CacheWatcherOptions{options.watch_queue_capacity, plan.allow_bookmarks});
  LiveWatch live(req.stream, options.write_timeout, watcher, bookmarks);
  waker->live = &live;
  waker->stream = &req.stream;
  watcher->setWakeCallback([waker, hub = WakeHub::forThisThread(executor)] { wakeStream(waker, hub); });

  // Register first, then read the snapshot or history: the dispatcher guarantees that
  // the two meet without a gap or an overlap.
  watch::WatchDispatcher::RegistrationPtr registration;
  cache::SnapshotConstSharedPtr snapshot;
  std::optional<cache::HistoryCursor> cursor;
  uint64_t replay_through = 0;
  uint64_t last_rv = 0;
  switch (plan.start) {
    case WatchPlan::Start::Snapshot: {
      auto start = dispatcher.registerWithSnapshot(watcher, proof ? proof->revision : 0);
      registration = std::move(start.registration);
      snapshot = std::move(start.snapshot);
      last_rv = snapshot->resourceVersion();
      if (proof) {
        if (!freshEnough(last_rv, *proof)) {
          ctx.metrics.cachePassThrough(resource_name, "raced");
          co_return std::nullopt;
        }
        // The initial state is the upstream's at the proven revision: the
        // initial-events-end bookmark says so, and nothing at or below it follows.
        last_rv = std::max(last_rv, proof->revision);
      }
      break;
    }
    case WatchPlan::Start::Resume: {
      auto start = dispatcher.registerAfter(watcher, plan.from_rv);
      registration = std::move(start.registration);
      replay_through = start.replay_through;
      last_rv = plan.from_rv;
      if (plan.from_rv < replay_through) {
        auto c = store.watchCursor(plan.from_rv);
        if (!c) {
          // W5: too old -> 200 with one ERROR event, then close.
          co_await writeDownstream(req.stream, watchResponseHead(keep), options.write_timeout);
          out.add(watch::encodeErrorEvent(expiredStatus(c.error().message)));
          co_await out.flush();
          co_await writeDownstream(req.stream, "0\r\n\r\n", options.write_timeout);
          co_return ForwardOutcome{200, keep, true};
        }
        cursor = *c;
      }
      break;
    }
    case WatchPlan::Start::Now: {
      // RV unset: the changes after a revision read when the request arrived (C1).
      const uint64_t now_rv = std::max(store.currentRV(), proof ? proof->revision : 0);
      auto start = dispatcher.registerAfter(watcher, now_rv);
      registration = std::move(start.registration);
      last_rv = std::max(now_rv, start.replay_through);
      break;
    }
  }

  ctx.metrics.streamOpened();
  ctx.metrics.cachedWatchOpened(resource_name);
  control.streaming = true;
  control.interrupt = [t = std::weak_ptr<asio::steady_timer>(wake_timer)] {
    if (auto timer = t.lock()) timer->cancel();
  };
  auto client = std::make_shared<ClientWatch>();
  client->done = std::make_shared<asio::steady_timer>(executor, Clock::time_point::max());
  bool client_watch_started = false;
  uint64_t events_sent = 0;
  std::exception_ptr failure;
  try {
    // W2: headers go out at once, before any event.
    co_await writeDownstream(req.stream, watchResponseHead(keep), options.write_timeout);
    asio::co_spawn(executor, watchClient(req.stream, req.buffer, client, wake_timer), [client](std::exception_ptr) {
      client->finished = true;
      client->done->cancel();
    });
    client_watch_started = true;

    if (snapshot) {
      // W4/W9: the current state as ADDED events in key order, each at its own RV.
      cache::ListRequest list;
      list.namespace_name = plan.filter.namespaceScope();
      list.predicate = [&plan](const cache::Object& o) { return plan.filter.matches(o); };
      for (const auto& object : snapshot->list(list).items) {
        out.add(watch::encodeEvent(cache::EventType::Added, object->json()));
        ++events_sent;
        if (out.bytes() >= kFlushBytes) co_await out.flush();
      }
      if (plan.initial_events_end) {
        out.add(bookmarks.frame(last_rv, true));
        ++events_sent;
      }
      co_await out.flush();
      snapshot.reset();
    } else if (cursor) {
      // W4 RV=N: the history after N up to where live delivery starts.
      std::vector<cache::WatchEvent> events;
      bool done = false;
      while (!done) {
        events.clear();
        if (!store.readEvents(*cursor, kReplayBatch, events)) {
          // Evicted while we read: end silently (W6); the client resumes and learns 410.
          watcher->close(watch::CacheWatcher::CloseReason::Stopped);
          break;
        }
        if (events.empty()) break;
        for (const auto& event : events) {
          if (event.resource_version > replay_through) {
            done = true;
            break;
          }
          std::string frame = replayFrame(plan.filter, event);
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

    live.last_rv = last_rv;
    live.events_sent = events_sent;
    error_code ignored;
    req.stream.socket().set_option(asio::socket_base::send_buffer_size(kLiveSendBuffer), ignored);
    auto next_bookmark = started + options.watch_bookmark_interval;
    bool pre_deadline_sent = false;
    while (!control.stopping && !client->gone) {
      // What a wake-up could not write completely goes first: the chunk is under way.
      if (!live.out.empty()) {
        co_await live.out.flush();
        continue;
      }
      const auto now = Clock::now();
      if (now >= deadline) break;
      const bool pre_deadline = !pre_deadline_sent && now + kPreDeadlineBookmark >= deadline;
      const bool bookmark_due = plan.allow_bookmarks && (now >= next_bookmark || pre_deadline);
      // Read before draining: every event at or below it is already queued (W7, W11).
      uint64_t bookmark_rv = bookmark_due ? dispatcher.lastRV() : 0;
      // W7 with the freshest proven RV: when a probe proved the store's state to be the
      // upstream's at a newer revision, the bookmark carries that revision (as the
      // apiserver's do once its cache was brought forward), and the events below it that
      // may still arrive (objects created and deleted again) are no longer this watch's.
      if (bookmark_due) {
        const uint64_t proven = cached->freshness().provenAt(plan.filter.namespaceScope(), bookmark_rv);
        if (proven > bookmark_rv && dispatcher.skipThrough(*watcher, bookmark_rv, proven)) bookmark_rv = proven;
      }
      live.takeQueued();
      if (bookmark_due) {
        if (pre_deadline) pre_deadline_sent = true;
        next_bookmark = now + options.watch_bookmark_interval;
        if (bookmark_rv > live.last_rv) {
          live.out.add(bookmarks.frame(bookmark_rv));
          live.last_rv = bookmark_rv;
          ++live.events_sent;
        }
      }
      if (!live.out.empty()) continue;
      if (watcher->closeReason() != watch::CacheWatcher::CloseReason::Open) break;
      auto wake_at = deadline;
      if (plan.allow_bookmarks) {
        wake_at = std::min(wake_at, next_bookmark);
        if (!pre_deadline_sent) wake_at = std::min(wake_at, deadline - kPreDeadlineBookmark);
      }
      wake_timer->expires_at(wake_at);
      error_code ec;
      live.parked = true;
      co_await wake_timer->async_wait(redirect_error(use_awaitable, ec));
      live.parked = false;
    }
    if (!client->gone) co_await writeDownstream(req.stream, "0\r\n\r\n", options.write_timeout);
  } catch (...) {
    failure = std::current_exception();  // co_await is not allowed inside a handler
  }
  events_sent = std::max(events_sent, live.events_sent);
  waker_guard.disarm();
  registration.reset();
  if (watcher->closeReason() == watch::CacheWatcher::CloseReason::TooSlow) {
    ctx.metrics.cachedWatchTerminatedSlow(resource_name);
    spdlog::info("closed a watch of {} from {}: client too slow", resource_name, req.client_ip);
  }
  ctx.metrics.cachedWatchEventsSent(resource_name, events_sent);
  ctx.metrics.cachedWatchClosed(resource_name);
  ctx.metrics.streamClosed();
  if (client_watch_started && !client->finished) {
    // The client watch reads the socket and the session's buffer: it must be over before
    // this frame (and maybe the session) goes away.
    error_code ignored;
    req.stream.socket().cancel(ignored);
    co_await client->done->async_wait(redirect_error(use_awaitable, ignored));
  }
  control.interrupt = nullptr;
  control.streaming = false;
  if (failure) std::rethrow_exception(failure);
  co_return ForwardOutcome{200, keep && !client->gone && !control.stopping, true};
}

}  // namespace

asio::awaitable<std::optional<ForwardOutcome>> serveCachedWatch(DownstreamRequest& req, CacheContext& ctx) {
  const RequestInfo& info = req.info;
  // Served by the upstream: a named watch path (deprecated /watch/.../name form, W1),
  // HTTP/1.0 (no chunked framing), a request with a body, or a Table /
  // PartialObjectMetadata rendering (N3, N4).
  if (info.parts.size() > 1 || req.http10 || !req.parser.is_done()) co_return std::nullopt;
  if (!acceptsJsonWatch(findHeader(req.headers, "Accept"))) co_return std::nullopt;
  auto cached = ctx.registry.find(info.api_group, info.api_version, info.resource, info.namespace_);
  if (!cached || !cached->hasSynced()) co_return std::nullopt;
  if (!cached->namespaceScope().empty() && cached->namespaceScope() != info.namespace_) co_return std::nullopt;
  // A cluster-scoped resource under a namespace path is no route of the apiserver's (404).
  if (!cached->resource().namespaced && !info.namespace_.empty()) co_return std::nullopt;

  const size_t q = req.target.find('?');
  const std::string_view query = q == std::string::npos ? std::string_view() : std::string_view(req.target).substr(q + 1);
  auto planned = planWatch(query, info.namespace_, cached->resource(), ctx.options.watch_max_lifetime, randomUnit(),
                           info.watch_prefix);
  if (auto* answer = std::get_if<HttpAnswer>(&planned)) {
    encodeStatus(*answer, statusEncodingFor(findHeader(req.headers, "Accept")));
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
    co_await writeDownstream(req.stream, watchResponseHead(keep) + "0\r\n\r\n", ctx.options.write_timeout);
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
    proof = co_await proveFresh(ctx, *cached, info.namespace_, collection, FreshnessNeed{Clock::now(), 0});
    if (!proof) {
      ctx.metrics.cachePassThrough(cached->resource().displayName(), "unproven");
      co_return std::nullopt;
    }
  }
  co_return co_await streamWatch(req, ctx, std::move(cached), std::move(plan), proof);
}

}  // namespace proxy::io
