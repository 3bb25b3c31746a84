#pragma once
// An httplib::Server on 127.0.0.1 and a port picked by the kernel, for upstream tests.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <doctest/doctest.h>
#include <httplib.h>

#include "proxy/upstream/upstream_options.h"

namespace watch::testing {

// A loopback server whose handlers the test installs before start().
struct LoopbackServer {
  LoopbackServer() = default;
  ~LoopbackServer() {
    {
      std::lock_guard lock(mu);
      closing = true;
    }
    cv.notify_all();
    server.stop();
    if (thread.joinable()) thread.join();
  }
  void start() {
    port = server.bind_to_any_port("127.0.0.1");
    REQUIRE(port > 0);
    thread = std::thread([this] { server.listen_after_bind(); });
    // Server::stop() is a no-op until the accept loop runs, so the destructor could hang
    // on join if it raced ahead of it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!server.is_running() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    REQUIRE(server.is_running());
  }
  proxy::UpstreamOptions upstream() const {
    proxy::UpstreamOptions options;
    options.scheme = "http";
    options.host = "127.0.0.1";
    options.port = static_cast<uint16_t>(port);
    return options;
  }
  // Lets a streaming handler idle until the test ends, waking up to notice shutdown.
  void idleUntilClosing() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return closing; });
  }

  httplib::Server server;
  int port = 0;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool closing = false;
};


}  // namespace watch::testing
