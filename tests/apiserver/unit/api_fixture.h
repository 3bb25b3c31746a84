#pragma once
// ApiServer request handling without sockets: a fake ResponseStream records what a
// handler writes, and a Fixture drives the server over the built-in catalog.
#include <doctest/doctest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <rapidjson/document.h>

#include "tests/apiserver/handlers/api_server.h"

namespace testapi::test {

class FakeStream : public ResponseStream {
 public:
  bool send(HttpResponse&& r) override {
    std::lock_guard lk(mu_);
    response_ = std::move(r);
    return true;
  }
  bool startChunked(int status, const std::string&, const Headers& headers) override {
    std::lock_guard lk(mu_);
    response_.status = status;
    response_.headers = headers;
    return true;
  }
  bool writeChunk(std::string_view data) override {
    {
      std::lock_guard lk(mu_);
      response_.body += data;
      chunks_.emplace_back(data);
    }
    cv_.notify_all();
    return true;
  }
  bool finishChunked() override {
    std::lock_guard lk(mu_);
    finished_ = true;
    return true;
  }
  bool peerClosed() override { return false; }
  void abort() override {
    std::lock_guard lk(mu_);
    aborted_ = true;
  }
  bool acceptWebSocket(const std::string&, const std::function<void(WebSocketChannel&)>&) override { return false; }
  bool writeRaw(std::string_view bytes) override {
    {
      std::lock_guard lk(mu_);
      raw_ += bytes;
    }
    cv_.notify_all();
    return true;
  }
  // Hands over what sendFromPeer() queued; false after closeFromPeer().
  bool readAvailable(std::string& into) override {
    std::lock_guard lk(mu_);
    into += std::exchange(peer_input_, "");
    return !peer_closed_;
  }
  void sendFromPeer(std::string bytes) {
    std::lock_guard lk(mu_);
    peer_input_ += bytes;
  }
  void closeFromPeer() {
    std::lock_guard lk(mu_);
    peer_closed_ = true;
  }
  // Waits (with a deadline) until the raw bytes written contain `bytes`.
  bool waitForRaw(const std::string& bytes) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, std::chrono::seconds(5), [&] { return raw_.find(bytes) != std::string::npos; });
  }
  std::string raw() {
    std::lock_guard lk(mu_);
    return raw_;
  }
  // The chunks of a chunked response, as sent (one per writeChunk).
  std::vector<std::string> chunks() {
    std::lock_guard lk(mu_);
    return chunks_;
  }
  bool waitForChunks(size_t n) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, std::chrono::seconds(5), [&] { return chunks_.size() >= n; });
  }
  bool finished() {
    std::lock_guard lk(mu_);
    return finished_;
  }
  bool aborted() {
    std::lock_guard lk(mu_);
    return aborted_;
  }

  // Waits (with a deadline) until the body contains `text`.
  bool waitFor(const std::string& text) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, std::chrono::seconds(5), [&] { return response_.body.find(text) != std::string::npos; });
  }
  HttpResponse response() {
    std::lock_guard lk(mu_);
    return response_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  HttpResponse response_;
  std::string raw_;         // writeRaw
  std::string peer_input_;  // for readAvailable
  bool peer_closed_ = false;
  std::vector<std::string> chunks_;
  bool finished_ = false;  // finishChunked
  bool aborted_ = false;
};

struct Fixture {
  ResourceCatalog catalog = ResourceCatalog::builtinDefault();
  Storage storage{catalog, StorageOptions{.history_size = 100}};
  ApiServer api{catalog, storage, ApiServerOptions{.too_large_rv_wait = std::chrono::milliseconds(50)}};

  Fixture() { api.createDefaultNamespaces(); }

  HttpResponse call(const std::string& method, const std::string& target, const std::string& body = "",
                    const std::string& content_type = "application/json") {
    FakeStream out;
    api.handle(request(method, target, body, content_type), out);
    return out.response();
  }
  // A GET with an Accept header.
  HttpResponse get(const std::string& target, const std::string& accept) {
    FakeStream out;
    HttpRequest req = request("GET", target);
    req.headers["accept"] = accept;
    api.handle(req, out);
    return out.response();
  }
  static HttpRequest request(const std::string& method, const std::string& target, const std::string& body = "",
                             const std::string& content_type = "application/json") {
    HttpRequest req;
    req.method = method;
    req.target = target;
    auto q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) req.query = parseQuery(target.substr(q + 1));
    req.body = body;
    if (!body.empty()) req.headers["content-type"] = content_type;
    return req;
  }
  // POSTs a Widget (example.com/v1, the catalog's custom resource) and returns the
  // response body.
  std::string widget(const std::string& body, const std::string& ns = "default") {
    auto r = call("POST", "/apis/example.com/v1/namespaces/" + ns + "/widgets", body);
    REQUIRE(r.status == 201);
    return r.body;
  }
  void configMap(const std::string& name, const std::string& labels = "{}") {
    auto r = call("POST", "/api/v1/namespaces/default/configmaps",
                  R"({"metadata":{"name":")" + name + R"(","labels":)" + labels + "}}");
    REQUIRE(r.status == 201);
  }
};

inline rapidjson::Document parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str());
  return d;
}

inline bool hasHeader(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return true;
  return false;
}

}  // namespace testapi::test
