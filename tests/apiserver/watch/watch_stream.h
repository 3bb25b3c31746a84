#pragma once
// WatchStream: how a watch's events reach its client (W2), as kube-apiserver's WatchServer
// writes them. Over HTTP/1.1 a chunked response, flushed per batch, each flush one gzip
// member when the request is a watch-list that accepts gzip (HandleHTTP with
// perFlushGzipWriter); over a WebSocket one text message per event, then a close frame
// 1000 (HandleWS). The watch handler writes events and flushes; it never sees protocol text.
//
// Not thread-safe: one watch thread owns its stream.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "tests/apiserver/http/http_types.h"

namespace testapi {

class WatchStream {
 public:
  virtual ~WatchStream() = default;
  // One encoded event (a JSON line). False once the client is gone.
  virtual bool write(std::string_view event) = 0;
  // Sends what was written since the last flush (the apiserver flushes when its result
  // channel is empty, and after the initial-events-end bookmark).
  virtual bool flush() = 0;
  // Non-blocking: the client has gone (TCP closed; on a WebSocket also a close frame, an
  // unmasked frame or an oversized one). Answers its pings on the way.
  virtual bool clientGone() = 0;
  // How long an idle stream may wait before clientGone() is asked again.
  virtual std::chrono::milliseconds pollInterval() const = 0;
  // Ends the stream as the apiserver does when the watch ends for any reason: the last
  // chunk, or a close frame with status 1000 and the connection closed.
  virtual void finish() = 0;
  // Drops the connection instead, as a dying apiserver process does: no last chunk, no
  // close frame.
  virtual void abort() = 0;
};

struct WatchStreamOptions {
  Headers headers;          // Cache-Control, Audit-Id, ...: the HTTP answer's headers
  bool watch_list = false;  // isListWatchRequest: sendInitialEvents=true (after defaulting) and bookmarks
};

// Starts the stream for `req`: the WebSocket handshake when the request asks for an upgrade
// (nullptr when Go's handshake refuses it; its answer is written), otherwise the 200 head.
std::unique_ptr<WatchStream> openWatchStream(const HttpRequest& req, ResponseStream& out, WatchStreamOptions opts);

}  // namespace testapi
