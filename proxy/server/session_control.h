#pragma once
// SessionControl: what a client connection shares with the request it is serving, so
// that server shutdown can interrupt a stream. Plain code (no Asio).

#include <functional>
#include <memory>

namespace proxy::io {

struct UpstreamConnection;

// `stopping` asks the relay to end the response cleanly; when `streaming`, `active` is
// closed to wake it. Ordinary in-flight requests are left to finish within the drain.
struct SessionControl {
  bool stopping = false;
  bool streaming = false;  // a long-running response or an upgraded connection
  std::shared_ptr<UpstreamConnection> active;
  // A stream served by the proxy itself (a cached watch) has no upstream connection to
  // close: stop() calls this instead, on the session's io thread.
  std::function<void()> interrupt;
};

}  // namespace proxy::io
