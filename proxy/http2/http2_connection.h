#pragma once
// Http2Connection: one HTTP/2 connection (proxy/http2/http2_session.h) on nghttp2. Its
// socket side (http2_session.cpp): a reader coroutine feeds nghttp2 what arrives, a writer
// coroutine gathers what nghttp2 produces into one socket write, and each stream's request
// is a coroutine of its own answering an Http2Stream. Its nghttp2 side
// (http2_connection.cpp): the session's settings, the callbacks that build streams and
// their requests, and the data provider that takes DATA from the streams' queues into the
// write batch. Internal to proxy/http2/; lives on the connection's io thread.

#include <nghttp2/nghttp2.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>

#include <boost/asio/steady_timer.hpp>

#include "proxy/asio_beast.h"
#include "proxy/http2/http2_limits.h"
#include "proxy/http2/http2_stream.h"
#include "proxy/http2/write_batch.h"
#include "proxy/server/server_context.h"

namespace proxy::io {

// Go's http2.Server as kube-apiserver configures it (k8s.io/apiserver secure_serving.go):
// MaxUploadBufferPerStream and MaxReadFrameSize 256 KiB, the connection window that times
// the stream bound.
inline constexpr uint32_t kStreamWindow = 256 * 1024;
inline constexpr uint32_t kMaxFrameSize = 256 * 1024;
// Frames gathered into one socket write. A TLS connection copies them into one buffer
// (64 KiB per connection at most); a plain one hands sendmsg the pieces where they lie,
// so its batch costs nothing to grow, and a larger one saves sendmsg calls and the
// client's wake-ups when many watches of one connection have events at once.
inline constexpr size_t kCopiedBatchBytes = 64 * 1024;
inline constexpr size_t kGatheredBatchBytes = 256 * 1024;

class Http2Connection final : public Http2StreamOwner {
 public:
  Http2Connection(ServerContext& server, Worker& worker, Session& connection, std::string client_ip)
      : server_(server),
        worker_(worker),
        connection_(connection),
        client_ip_(std::move(client_ip)),
        limits_(http2Limits(server.options)),
        resets_(limits_.reset_burst, limits_.reset_rate),
        executor_(connection.stream.get_executor()),
        batch_(connection.stream.tls() != nullptr),
        wake_(executor_),
        streams_done_(executor_),
        idle_timer_(executor_),
        header_timer_(executor_),
        write_guard_(executor_) {}
  ~Http2Connection() override {
    *alive_ = false;
    if (h2_) nghttp2_session_del(h2_);
  }
  Http2Connection(const Http2Connection&) = delete;
  Http2Connection& operator=(const Http2Connection&) = delete;

  asio::awaitable<void> run();

  // Http2StreamOwner
  void submitHead(int32_t id, const ResponseHead& head, bool end_stream) override;
  void resumeData(int32_t id) override {
    nghttp2_session_resume_data(h2_, id);
    wakeWriter();
  }
  void consumed(int32_t id, size_t n) override {
    nghttp2_session_consume(h2_, id, n);
    wakeWriter();
  }
  void resetStream(int32_t id, uint32_t error_code) override {
    nghttp2_submit_rst_stream(h2_, NGHTTP2_FLAG_NONE, id, error_code);
    wakeWriter();
  }
  void writeNow() override;

 private:
  bool start();
  asio::awaitable<void> readLoop();
  asio::awaitable<void> writeLoop();
  // Frames nghttp2 has ready, gathered into batch_ up to its limit; false on a failure
  // that ends the connection.
  bool gatherFrames();
  // Writes batch_ (the write guard bounds a client that stops reading); `ec` on failure.
  asio::awaitable<void> writeBatch(error_code& ec);
  // The streams whose bytes batch_ took learn that its write ended (or that it copied them).
  void completeBatch();
  void wakeWriter() {
    if (writer_idle_) wake_.cancel();
  }
  // Graceful end (server stopping, or idle): GOAWAY naming the last stream served; the
  // streams in flight finish, then the connection closes.
  void goAway();
  // Ends the connection at once: GOAWAY with `error_code`, then the socket closes.
  void terminate(uint32_t error_code);
  void armIdleTimer();
  // A request's header block began: it must end within the read-header timeout.
  void armHeaderTimer(int32_t id);
  // Whether a stream's request has started (its header block ended).
  bool anyStarted() const;
  // A request whose header block ended: its handler runs now if fewer than
  // MAX_CONCURRENT_STREAMS run, else waits for one to end; false when too many wait
  // (the connection is ended with ENHANCE_YOUR_CALM).
  bool scheduleRequest(const std::shared_ptr<Http2Stream>& stream);
  // A handler ended: the next waiting one whose stream is not over starts.
  void handlerDone();
  void startRequest(const std::shared_ptr<Http2Stream>& stream);
  asio::awaitable<void> serveStream(std::shared_ptr<Http2Stream> stream, std::chrono::steady_clock::time_point arrived);
  Http2Stream* streamOf(int32_t id) {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
  }

  static int onBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int onHeader(nghttp2_session*, const nghttp2_frame* frame, nghttp2_rcbuf* name, nghttp2_rcbuf* value,
                      uint8_t flags, void* self);
  static int onFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int onFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int onDataChunk(nghttp2_session*, uint8_t flags, int32_t id, const uint8_t* data, size_t len, void* self);
  static int onStreamClose(nghttp2_session*, int32_t id, uint32_t error_code, void* self);
  static ssize_t readData(nghttp2_session*, int32_t id, uint8_t* buf, size_t length, uint32_t* data_flags,
                          nghttp2_data_source* source, void* self);
  static int sendData(nghttp2_session*, nghttp2_frame* frame, const uint8_t* framehd, size_t length,
                      nghttp2_data_source* source, void* self);

  ServerContext& server_;
  Worker& worker_;
  Session& connection_;
  const std::string client_ip_;
  const Http2Limits limits_;
  ResetBudget resets_;
  asio::any_io_executor executor_;
  nghttp2_session* h2_ = nullptr;
  std::unordered_map<int32_t, std::shared_ptr<Http2Stream>> streams_;
  WriteBatch batch_;  // the next socket write; only the writer fills it (nghttp2_session_mem_send)
  // For each stream whose DATA batch_ took, how far: told by completeBatch().
  std::vector<std::pair<std::shared_ptr<Http2Stream>, uint64_t>> taken_;
  size_t running_ = 0;    // request coroutines not yet finished: at most limits_.max_streams
  std::deque<std::shared_ptr<Http2Stream>> waiting_;  // requests whose handler waits to start
  bool accepting_ = true;  // handlers may start (false once the reader is done)
  bool ended_ = false;    // the reader is done: the writer flushes and stops
  bool going_away_ = false;
  bool terminated_ = false;  // ended at once (terminate): frames still read start nothing
  bool writer_idle_ = false;         // the writer waits on wake_
  asio::steady_timer wake_;          // the writer waits on it; cancel() wakes it
  asio::steady_timer streams_done_;  // cancelled when the last request coroutine ends
  asio::steady_timer idle_timer_;
  asio::steady_timer header_timer_;
  asio::steady_timer write_guard_;
  // A timer's handler queued before the connection ended runs after it: it checks this.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace proxy::io
