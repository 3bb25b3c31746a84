// HttpListerWatcher against a real HTTP server on loopback.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "loopback_server.h"
#include "proxy/upstream/http_lister_watcher.h"

using proxy::upstream::HttpListerWatcher;
using watch::ListOptions;
using watch::WatchEnd;
using watch::testing::LoopbackServer;

TEST_CASE("Request targets carry the ListOptions as client-go encodes them") {
  LoopbackServer server;
  auto options = server.upstream();
  options.path_prefix = "/k8s/clusters/c-1";
  HttpListerWatcher lw(options, "/api/v1/pods");
  ListOptions opts;
  opts.limit = 500;
  opts.continue_token = "a+b/c=";
  opts.label_selector = "app in (web,db),tier!=x";
  CHECK(lw.requestTargetForTest(opts, false) ==
        "/k8s/clusters/c-1/api/v1/pods?continue=a%2Bb%2Fc%3D&labelSelector=app%20in%20%28web%2Cdb%29%2Ctier%21%3Dx&limit=500");

  ListOptions w;
  w.allow_watch_bookmarks = true;
  w.send_initial_events = true;
  w.resource_version_match = "NotOlderThan";
  w.timeout_seconds = 452;
  CHECK(lw.requestTargetForTest(w, true) ==
        "/k8s/clusters/c-1/api/v1/pods?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&"
        "sendInitialEvents=true&timeoutSeconds=452&watch=true");
}

TEST_CASE("A watch delivers whole lines even when chunks split them (W2)") {
  LoopbackServer server;
  std::string seen_query;
  server.server.Get("/api/v1/pods", [&](const httplib::Request& req, httplib::Response& res) {
    seen_query = req.get_param_value("resourceVersion") + "|" + req.get_param_value("watch");
    res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
      const std::string parts[] = {"{\"type\":\"ADD", "ED\",\"n\":1}\n{\"type\":\"MODIFIED\",\"n\":2}\r\n",
                                   "\n{\"type\":\"DELETED\"", ",\"n\":3}"};
      for (const auto& part : parts) sink.write(part.data(), part.size());
      sink.done();
      return true;
    });
  });
  server.start();
  HttpListerWatcher lw(server.upstream(), "/api/v1/pods");
  ListOptions opts;
  opts.resource_version = "42";
  std::vector<std::string> lines;
  auto result = lw.watch(opts, [&](std::string_view line) {
    lines.emplace_back(line);
    return true;
  }, std::stop_token{});
  CHECK(result.end == WatchEnd::Closed);
  CHECK(seen_query == "42|true");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == R"({"type":"ADDED","n":1})");
  CHECK(lines[1] == R"({"type":"MODIFIED","n":2})");
  CHECK(lines[2] == R"({"type":"DELETED","n":3})");
  CHECK(result.lines == 3);
}

TEST_CASE("A protobuf watch delivers each length-prefixed frame's message, whole, however chunks split it (W2)") {
  LoopbackServer server;
  std::string seen_accept;
  const std::string first = "\x0a\x05" "ADDED";
  const std::string second(300, 'x');  // a frame longer than one chunk
  auto frame = [](const std::string& message) {
    const auto n = static_cast<uint32_t>(message.size());
    return std::string{char(n >> 24), char(n >> 16), char(n >> 8), char(n)} + message;
  };
  const std::string stream = frame(first) + frame(second) + frame(first).substr(0, 5);  // then a cut frame
  server.server.Get("/api/v1/pods", [&](const httplib::Request& req, httplib::Response& res) {
    seen_accept = req.get_header_value("Accept");
    res.set_chunked_content_provider("application/vnd.kubernetes.protobuf;stream=watch",
                                     [stream](size_t, httplib::DataSink& sink) {
                                       for (size_t at = 0; at < stream.size(); at += 7) {
                                         sink.write(stream.data() + at, std::min<size_t>(7, stream.size() - at));
                                       }
                                       sink.done();
                                       return true;
                                     });
  });
  server.start();
  HttpListerWatcher lw(server.upstream(), "/api/v1/pods");
  ListOptions opts;
  opts.accept = "application/vnd.kubernetes.protobuf";
  std::vector<std::string> frames;
  auto result = lw.watch(opts, [&](std::string_view message) {
    frames.emplace_back(message);
    return true;
  }, std::stop_token{});
  CHECK(seen_accept == "application/vnd.kubernetes.protobuf");
  CHECK(result.end == WatchEnd::Closed);
  REQUIRE(frames.size() == 2);  // the cut third frame is not an event
  CHECK(frames[0] == first);
  CHECK(frames[1] == second);
}

TEST_CASE("A protobuf frame claiming more than 64 MiB breaks the stream; it is not the caller's cancel (W2)") {
  LoopbackServer server;
  server.server.Get("/api/v1/pods", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/vnd.kubernetes.protobuf;stream=watch", [](size_t, httplib::DataSink& sink) {
      const std::string huge("\xff\xff\xff\xff\x0a\x00", 6);
      sink.write(huge.data(), huge.size());
      sink.done();
      return true;
    });
  });
  server.start();
  HttpListerWatcher lw(server.upstream(), "/api/v1/pods");
  ListOptions opts;
  opts.accept = "application/vnd.kubernetes.protobuf";
  int calls = 0;
  auto result = lw.watch(opts, [&](std::string_view) {
    ++calls;
    return true;
  }, std::stop_token{});
  CHECK(calls == 0);
  CHECK(result.end == WatchEnd::TransportError);
  CHECK(result.transport_error.find("longer than") != std::string::npos);
}

TEST_CASE("A watch refused before streaming reports the status and the Status body (W5)") {
  LoopbackServer server;
  server.server.Get("/api/v1/pods", [](const httplib::Request&, httplib::Response& res) {
    res.status = 422;
    res.set_content(R"({"kind":"Status","code":422,"reason":"Invalid"})", "application/json");
  });
  server.start();
  HttpListerWatcher lw(server.upstream(), "/api/v1/pods");
  auto result = lw.watch({}, [](std::string_view) { return true; }, std::stop_token{});
  CHECK(result.end == WatchEnd::HttpError);
  CHECK(result.status == 422);
  CHECK(result.body == R"({"kind":"Status","code":422,"reason":"Invalid"})");
  CHECK(result.lines == 0);
}

TEST_CASE("Returning false from the line callback cancels the watch") {
  LoopbackServer server;
  server.server.Get("/api/v1/pods", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [&](size_t offset, httplib::DataSink& sink) {
      if (offset == 0) sink.write("{\"a\":1}\n{\"a\":2}\n", 16);
      server.idleUntilClosing();
      return false;
    });
  });
  server.start();
  HttpListerWatcher lw(server.upstream(), "/api/v1/pods");
  int calls = 0;
  auto result = lw.watch({}, [&](std::string_view) { return ++calls < 1; }, std::stop_token{});
  CHECK(result.end == WatchEnd::Canceled);
  CHECK(calls == 1);
}

TEST_CASE("Stopping interrupts an idle watch promptly") {
  LoopbackServer server;
  server.server.Get("/api/v1/pods", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [&](size_t, httplib::DataSink& sink) {
      sink.write("{\"first\":true}\n", 15);
      server.idleUntilClosing();
      return false;
    });
  });
  server.start();
  HttpListerWatcher lw(server.upstream(), "/api/v1/pods");
  std::stop_source source;
  std::mutex mu;
  std::condition_variable cv;
  bool got_line = false;
  watch::WatchResult result;
  std::thread watcher([&] {
    ListOptions opts;
    opts.timeout_seconds = 300;
    result = lw.watch(opts, [&](std::string_view) {
      std::lock_guard lock(mu);
      got_line = true;
      cv.notify_all();
      return true;
    }, source.get_token());
  });
  {
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(5), [&] { return got_line; });
  }
  REQUIRE(got_line);
  source.request_stop();
  watcher.join();
  // Ended by the stop request, not by the 300 s timeout or the server.
  CHECK(result.end == WatchEnd::Stopped);
}

TEST_CASE("A list returns status and body, and sends the token file's current token") {
  LoopbackServer server;
  std::mutex mu;
  std::vector<std::string> auth;
  server.server.Get("/apis/apps/v1/deployments", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    auth.push_back(req.get_header_value("Authorization"));
    res.set_content(R"({"kind":"DeploymentList","metadata":{"resourceVersion":"9"},"items":[]})", "application/json");
  });
  server.start();

  const auto token_file = std::filesystem::temp_directory_path() /
                          ("kcp-token-" + std::to_string(::getpid()) + "-" + std::to_string(server.port));
  auto write_token = [&](const std::string& token) {
    std::ofstream(token_file) << token << "\n";
  };
  write_token("first");
  auto options = server.upstream();
  options.bearer_token = "static";
  options.bearer_token_file = token_file.string();
  HttpListerWatcher lw(options, "/apis/apps/v1/deployments");

  auto first = lw.list({}, {});
  CHECK(first.status == 200);
  CHECK(first.body == R"({"kind":"DeploymentList","metadata":{"resourceVersion":"9"},"items":[]})");

  write_token("second");
  // Make the change visible even on filesystems with coarse timestamps.
  std::filesystem::last_write_time(token_file, std::filesystem::last_write_time(token_file) + std::chrono::seconds(2));
  CHECK(lw.list({}, {}).status == 200);
  std::filesystem::remove(token_file);

  std::lock_guard lock(mu);
  REQUIRE(auth.size() == 2);
  CHECK(auth[0] == "Bearer first");
  CHECK(auth[1] == "Bearer second");
}

TEST_CASE("An unreachable upstream is a transport error, not an HTTP status") {
  int free_port = 0;
  {
    // A port that was just listened on and is closed again refuses connections.
    LoopbackServer probe;
    probe.start();
    free_port = probe.port;
  }
  proxy::UpstreamOptions options;
  options.scheme = "http";
  options.host = "127.0.0.1";
  options.port = static_cast<uint16_t>(free_port);
  HttpListerWatcher lw(options, "/api/v1/pods");
  auto listed = lw.list({}, {});
  CHECK(listed.status == 0);
  CHECK_FALSE(listed.transport_error.empty());
  auto watched = lw.watch({}, [](std::string_view) { return true; }, std::stop_token{});
  CHECK(watched.end == WatchEnd::TransportError);
}

TEST_CASE("Stopping abandons a LIST the upstream is slow to answer") {
  LoopbackServer server;
  std::mutex mu;
  std::condition_variable cv;
  bool received = false;
  server.server.Get("/api/v1/pods", [&](const httplib::Request&, httplib::Response& res) {
    {
      // Notified under the lock: the test may destroy `cv` as soon as it sees `received`.
      std::lock_guard lock(mu);
      received = true;
      cv.notify_all();
    }
    server.idleUntilClosing();
    res.set_content("{}", "application/json");
  });
  server.start();
  HttpListerWatcher lw(server.upstream(), "/api/v1/pods");
  std::stop_source source;
  watch::ListResponse response;
  std::thread lister([&] { response = lw.list({}, source.get_token()); });
  {
    std::unique_lock lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return received; }));
  }
  // The server holds the request until it closes, after this test: the list can end
  // only by the stop request, with no response.
  source.request_stop();
  lister.join();
  CHECK(response.status == 0);
}
