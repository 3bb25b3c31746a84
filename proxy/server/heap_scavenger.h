#pragma once
// HeapScavenger: gives the heap that ended connections leave behind back to the OS, as
// Go's runtime scavenger does for kube-apiserver. A TLS connection holds about 90 KiB
// while it lives (OpenSSL's and Asio's record buffers, nghttp2's session); glibc keeps
// what they free in its per-thread arenas, where it counts as the process's RSS for good.
// A burst of short connections (a gateway's clients reconnecting after a restart, Go's
// transport dialing once per request before its first HTTP/2 handshake ends) left 186 MB
// behind after 2,000 of them (docs/benchmarks.md). One malloc_trim a second after a burst
// of ended connections returns it (the same 2,000: 10 MB left).
//
// One per io thread (Worker), used only there: the trim waits for the burst to settle
// rather than running once per connection. The Worker destroys it after its io thread
// has stopped, so a wait still pending is destroyed unrun.

#include <chrono>
#include <cstddef>

#include <boost/asio/steady_timer.hpp>

#include "proxy/asio_beast.h"

namespace proxy::io {

class HeapScavenger {
 public:
  // Connections that must have ended since the last trim before one is scheduled, and
  // how long after the last of them it runs.
  static constexpr size_t kEndedConnections = 64;
  static constexpr std::chrono::seconds kSettle{1};

  explicit HeapScavenger(asio::io_context& ctx) : timer_(ctx) {}

  // A connection ended (its memory is freed once its coroutine returns).
  void connectionEnded();

 private:
  asio::steady_timer timer_;
  size_t ended_ = 0;
  bool scheduled_ = false;
};

}  // namespace proxy::io
