#pragma once
// ForwardOutcome: how answering one request went, as the session loop needs it to count
// the request and decide about the connection. Plain code (no Asio).

namespace proxy::io {

struct ForwardOutcome {
  unsigned code = 0;             // 0: nothing was answered (the client left)
  bool keep_connection = false;  // the downstream connection can serve another request
  bool long_running = false;     // watch/stream/upgrade: excluded from latency
};

}  // namespace proxy::io
