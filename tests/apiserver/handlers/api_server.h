#pragma once
// ApiServer: the request handling of kube-test-apiserver. Routes one HTTP request to
// discovery, OpenAPI, control or resource handlers, which answer from Storage with
// kube-apiserver's semantics (kube-api-contract.md clauses cited at each handler).
//
// Thread safety: handle() is called concurrently from every connection thread.

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "tests/apiserver/http/http_types.h"
#include "tests/apiserver/media/media.h"
#include "tests/apiserver/http/request_info.h"
#include "tests/apiserver/storage/resource_catalog.h"
#include "tests/apiserver/storage/storage.h"

namespace testapi {

class HttpServer;

struct ApiServerOptions {
  std::chrono::seconds bookmark_interval{60};  // W7: per-watcher bookmark period
  std::string token;                            // when set, Bearer token required (401 otherwise)
  bool authn = false;                           // --authn: test identities and rules (auth.h) enforced
  bool enable_control = false;                  // /control/* endpoints
  std::string server_address;                   // host:port, for discovery
  // R7: how long a read waits for a future resourceVersion before 504.
  std::chrono::milliseconds too_large_rv_wait{3000};
};

struct ApiCounters {
  std::mutex mu;
  std::map<std::string, uint64_t> requests;  // "verb resource" -> count
  std::atomic<uint64_t> lists{0};
  std::atomic<uint64_t> watches{0};
  std::atomic<uint64_t> token_reviews{0};
  std::atomic<uint64_t> subject_access_reviews{0};
  // The last watches opened, oldest first (guarded by mu): which RV each resumed from,
  // so tests can tell a resumed watch from a fresh list (warm restart).
  struct WatchStartRecord {
    std::string resource;  // qualified resource, e.g. "pods", "deployments.apps"
    std::string resource_version;  // as requested; "" when unset
    std::string send_initial_events;  // "true", "false" or "" when unset
  };
  std::deque<WatchStartRecord> recent_watches;
};

class ApiServer {
 public:
  ApiServer(const ResourceCatalog& catalog, Storage& storage, ApiServerOptions opts);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  void handle(const HttpRequest& req, ResponseStream& out);
  // control/refuse needs to reach the listener.
  void setHttpServer(HttpServer* server) { http_ = server; }
  // Loads a few namespaces and objects for demos (--sample-data).
  void loadSampleData();
  // Creates the namespaces every cluster starts with.
  void createDefaultNamespaces();
  // Bulk-loads `count` realistic objects (control/load); returns how many were created.
  size_t loadObjects(const ServedResource& res, size_t count, size_t namespaces, size_t nodes);

 private:
  // ---- read_handlers.cpp ----
  void handleGet(const HttpRequest& req, const RequestInfo& info, const ServedResource& res, ResponseStream& out);
  void handleList(const HttpRequest& req, const RequestInfo& info, const ServedResource& res, ResponseStream& out);
  // ---- watch_handler.cpp ----
  void handleWatch(const HttpRequest& req, const RequestInfo& info, const ServedResource& res, ResponseStream& out);
  void recordWatch(const ServedResource& res, const ListOptions& opts);  // counters_ and recent_watches
  // ---- write_handlers.cpp ----
  void handleCreate(const HttpRequest& req, const RequestInfo& info, const ServedResource& res, ResponseStream& out);
  void handleUpdate(const HttpRequest& req, const RequestInfo& info, const ServedResource& res, ResponseStream& out);
  void handlePatch(const HttpRequest& req, const RequestInfo& info, const ServedResource& res, ResponseStream& out);
  // ---- delete_handlers.cpp ----
  void handleDelete(const HttpRequest& req, const RequestInfo& info, const ServedResource& res, ResponseStream& out);
  void handleDeleteCollection(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                              ResponseStream& out);
  void deleteNamespaceContents(const std::string& ns);
  // ---- discovery.cpp / openapi.cpp ----
  bool handleDiscovery(const HttpRequest& req, ResponseStream& out);
  bool handleOpenApi(const HttpRequest& req, ResponseStream& out);
  // ---- control.cpp ----
  void handleControl(const HttpRequest& req, ResponseStream& out);
  std::string countersJson();
  void restartApiServer(const HttpRequest& req, ResponseStream& out);
  // ---- pod_subresources.cpp ----
  void handlePodLog(const HttpRequest& req, const RequestInfo& info, const ServedResource& res, ResponseStream& out);
  void handlePodExec(const HttpRequest& req, const RequestInfo& info, const ServedResource& res, ResponseStream& out);
  void handleScale(const HttpRequest& req, const RequestInfo& info, const ServedResource& res, ResponseStream& out);

  // --token and --authn: false when a 401/403 was answered. `websocket_protocols` is set
  // when the token came as a WebSocket subprotocol: the Sec-WebSocket-Protocol left.
  bool admit(const HttpRequest& req, ResponseStream& out, std::optional<std::string>& websocket_protocols);
  void route(const HttpRequest& req, ResponseStream& out);
  void handleResource(const HttpRequest& req, const RequestInfo& info, ResponseStream& out);
  // Creates a validated, defaulted object (shared by POST, server-side apply on a
  // missing object and the loaders).
  Result<StoredObjectPtr> createObject(const ServedResource& res, const std::string& ns, rapidjson::Document& doc,
                                       bool dry_run);
  // Writes `doc` as the new state of an existing object with update semantics
  // (RV precondition, immutable metadata, generation, status/main split).
  Result<StoredObjectPtr> updateObject(const ServedResource& res, const RequestInfo& info, const std::string& sub,
                                       const std::function<Result<bool>(const StoredObject& current,
                                                                        rapidjson::Document& doc)>& build,
                                       bool dry_run, bool create_if_missing);
  void startChurn(double rate, int seconds);

  const ServedResource* findResource(const RequestInfo& info) const;
  const ServedResource& namespaces() const { return *namespaces_; }

  const ResourceCatalog& catalog_;
  Storage& storage_;
  ApiServerOptions opts_;
  const ServedResource* namespaces_ = nullptr;
  HttpServer* http_ = nullptr;
  ApiCounters counters_;
  std::atomic<int64_t> slow_ms_{0};
  std::mutex slow_mu_;
  std::string slow_prefix_;  // only requests whose path starts with it are delayed ("" = all)
  std::atomic<int64_t> slowed_{0};  // requests being delayed now (control/counters "slowed")
  std::mutex churn_mu_;
  std::vector<std::jthread> churn_threads_;
};

// Response helpers shared by the handler files.
// API objects (objects, lists, Status, Table, discovery) go out as Go's json.Encoder
// writes them: ending with exactly one "\n".
// An error Status as responsewriters.ErrorNegotiated writes it for `req`'s Accept:
// encoded like any object, or indented raw JSON when only conversions are accepted.
void sendStatusError(const HttpRequest& req, ResponseStream& out, const ApiError& err);
void sendJsonBody(ResponseStream& out, int status, std::string&& body,
                  const std::string& content_type = "application/json");
// Non-API JSON the apiserver writes with json.Marshal (/version, the OpenAPI v3 root):
// no trailing newline.
void sendRawJson(ResponseStream& out, std::string&& body);
// `body` ending with exactly one "\n", as json.Encoder ends every value.
std::string withEncoderNewline(std::string body);
Headers standardHeaders();
bool isDryRun(const HttpRequest& req);

}  // namespace testapi
