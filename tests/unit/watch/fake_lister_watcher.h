#pragma once
// A ListerWatcher that replays scripted responses in order and records every request.
// When its watch script runs out, watch() blocks until the stop token fires, which is
// where a healthy reflector spends its life; tests wait for that state with a deadline.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "watch/reflector/lister_watcher.h"

namespace watch::testing {

struct ScriptedWatch {
  std::vector<std::string> lines;
  WatchEnd end = WatchEnd::Closed;  // how the stream ends after the lines
  int status = 200;
  std::string body;
  std::string transport_error;
  bool hold_open = false;  // after the lines, block until stopped
  std::function<void()> before_each_line;  // e.g. to step a FakeClock between lines
};

class FakeListerWatcher final : public ListerWatcher {
 public:
  void addList(ListResponse response) {
    std::lock_guard lock(mu_);
    lists_.push_back(std::move(response));
  }
  void addWatch(ScriptedWatch watch) {
    std::lock_guard lock(mu_);
    watches_.push_back(std::move(watch));
  }

  // watch::ListerWatcher
  ListResponse list(const ListOptions& opts, std::stop_token) override {
    std::lock_guard lock(mu_);
    list_requests_.push_back(opts);
    cv_.notify_all();
    if (lists_.empty()) return {0, "", "no scripted list response"};
    ListResponse response = std::move(lists_.front());
    lists_.pop_front();
    return response;
  }

  WatchResult watch(const ListOptions& opts, const LineCallback& on_line, std::stop_token stop) override {
    std::unique_lock lock(mu_);
    watch_requests_.push_back(opts);
    cv_.notify_all();
    if (watches_.empty()) return blockUntilStopped(lock, stop, 0);
    ScriptedWatch script = std::move(watches_.front());
    watches_.pop_front();
    lock.unlock();

    WatchResult result;
    for (const auto& line : script.lines) {
      if (script.before_each_line) script.before_each_line();
      ++result.lines;
      if (!on_line(line)) {
        result.end = WatchEnd::Canceled;
        return result;
      }
    }
    if (script.hold_open) {
      lock.lock();
      return blockUntilStopped(lock, stop, result.lines);
    }
    result.end = script.end;
    result.status = script.status;
    result.body = script.body;
    result.transport_error = script.transport_error;
    return result;
  }

  // Waits until `n` watches have been opened and the reflector is blocked in the last one.
  bool waitForBlockedWatch(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return watch_requests_.size() == n && blocked_ > 0; });
  }
  bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return done(); });
  }
  bool blocked() const {
    std::lock_guard lock(mu_);
    return blocked_ > 0;
  }

  std::vector<ListOptions> listRequests() const {
    std::lock_guard lock(mu_);
    return list_requests_;
  }
  std::vector<ListOptions> watchRequests() const {
    std::lock_guard lock(mu_);
    return watch_requests_;
  }

 private:
  WatchResult blockUntilStopped(std::unique_lock<std::mutex>& lock, std::stop_token stop, uint64_t lines) {
    ++blocked_;
    cv_.notify_all();
    std::condition_variable_any wake;
    wake.wait(lock, stop, [] { return false; });
    --blocked_;
    WatchResult result;
    result.end = WatchEnd::Stopped;
    result.lines = lines;
    return result;
  }

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<ListResponse> lists_;
  std::deque<ScriptedWatch> watches_;
  std::vector<ListOptions> list_requests_;
  std::vector<ListOptions> watch_requests_;
  int blocked_ = 0;  // watch() calls currently waiting for a stop
};

}  // namespace watch::testing
