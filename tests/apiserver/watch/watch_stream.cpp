#include "tests/apiserver/watch/watch_stream.h"

#include "tests/apiserver/http/go_gzip.h"
#include "tests/apiserver/http/websocket_protocol.h"

namespace testapi {
namespace {

// The batch a chunked stream sends in one piece at most, so a large initial state reaches
// the client while it is still being written.
constexpr size_t kFlushBytes = 64 * 1024;
// An idle HTTP stream only has to notice a closed connection eventually; a WebSocket
// client also waits for the answer to its close frame or ping, which Go sends at once
// from a reader goroutine.
constexpr std::chrono::milliseconds kHttpPollInterval{1000};
constexpr std::chrono::milliseconds kWebSocketPollInterval{100};

class ChunkedWatchStream final : public WatchStream {
 public:
  ChunkedWatchStream(ResponseStream& out, bool gzip) : out_(out), gzip_(gzip) {}

  bool start(Headers headers) {
    if (gzip_) {
      // BeginStream: "gzip applies to the body, not headers", which are flushed at once.
      headers.emplace_back("Content-Encoding", "gzip");
      headers.emplace_back("Vary", "Accept-Encoding");
    }
    return ok_ = out_.startChunked(200, "application/json", headers);
  }
  bool write(std::string_view event) override {
    pending_ += event;
    return pending_.size() < kFlushBytes || flush();
  }
  bool flush() override {
    if (pending_.empty() || !ok_) return ok_;
    // perFlushGzipWriter: a gzip.Writer is taken at the first write after a flush and
    // closed at the flush, so each flush is one complete gzip member.
    ok_ = out_.writeChunk(gzip_ ? gzipMember(pending_) : pending_);
    pending_.clear();
    return ok_;
  }
  bool clientGone() override { return !ok_ || out_.peerClosed(); }
  std::chrono::milliseconds pollInterval() const override { return kHttpPollInterval; }
  void finish() override {
    if (flush()) out_.finishChunked();
  }
  void abort() override { out_.abort(); }

 private:
  ResponseStream& out_;
  const bool gzip_;
  bool ok_ = false;
  std::string pending_;  // written since the last flush
};

// Frames by hand rather than with Beast's websocket::stream, which cannot give Go's bytes:
// its handshake checks and answers differ (Beast refuses a key that is not 24 characters,
// answers a bad version with 426, writes "Connection: upgrade" and a Server header); on a
// client's close frame it echoes the client's code where Go answers 1000; its close()
// waits for the peer's close frame where Go closes the connection at once; and a watch
// must notice a client's close while idle, which a blocking read on a stream that another
// call writes to cannot do on one thread.
class WebSocketWatchStream final : public WatchStream {
 public:
  explicit WebSocketWatchStream(ResponseStream& out) : out_(out) {}

  bool write(std::string_view event) override {
    // websocketFramer: JSON is text (UseTextFraming), one message per encoded event.
    ok_ = ok_ && out_.writeRaw(websocket::frame(websocket::Opcode::Text, event));
    return ok_;
  }
  bool flush() override { return ok_; }
  bool clientGone() override {
    if (!ok_ || ended_) return true;
    std::string in, reply;
    const bool open = out_.readAvailable(in);
    ended_ = reader_.feed(in, reply) || !open;
    if (!reply.empty()) ok_ = out_.writeRaw(reply);
    return ended_ || !ok_;
  }
  std::chrono::milliseconds pollInterval() const override { return kWebSocketPollInterval; }
  // HandleWS's deferred ws.Close(): a close frame 1000, whatever ended the watch.
  void finish() override { out_.writeRaw(websocket::closeFrame(websocket::kCloseNormal)); }
  void abort() override { out_.abort(); }

 private:
  ResponseStream& out_;
  websocket::ClientFrameReader reader_;
  bool ok_ = true;
  bool ended_ = false;
};

}  // namespace

std::unique_ptr<WatchStream> openWatchStream(const HttpRequest& req, ResponseStream& out, WatchStreamOptions opts) {
  if (websocket::isWebSocketRequest(req)) {
    const auto handshake = websocket::answerHandshake(req);
    out.writeRaw(handshake.answer);
    if (!handshake.accepted) return nullptr;
    return std::make_unique<WebSocketWatchStream>(out);
  }
  // HandleHTTP: ContentEncodingSupported(req, WatchListCompression), for watch-lists only.
  const bool gzip = opts.watch_list && acceptsGzip(req.firstHeader("accept-encoding"));
  auto stream = std::make_unique<ChunkedWatchStream>(out, gzip);
  stream->start(std::move(opts.headers));
  return stream;
}

}  // namespace testapi
