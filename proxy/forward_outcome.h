#pragma once
// ForwardOutcome: how answering one request went, as the request's loop needs it to count
// and log the request. Whether the connection goes on is its stream's to say
// (ServerStream::keepsConnection). Plain code (no Asio).

namespace proxy::io {

struct ForwardOutcome {
  unsigned code = 0;          // 0: nothing was answered (the client left)
  bool long_running = false;  // watch/stream/upgrade: excluded from latency
};

}  // namespace proxy::io
