#include "tests/apiserver/handlers/api_server.h"

#include "tests/apiserver/auth/auth.h"
#include "tests/apiserver/media/go_json.h"
#include "tests/apiserver/http/http_server.h"
#include "tests/apiserver/status/status_util.h"
#include "tests/apiserver/http/websocket_protocol.h"

namespace testapi {

Headers standardHeaders() {
  // E3: every apiserver response carries these.
  return {{"Cache-Control", "no-cache, private"}, {"Audit-Id", newUid()}};
}

std::string withEncoderNewline(std::string body) {
  while (!body.empty() && body.back() == '\n') body.pop_back();
  body += '\n';
  return body;
}

void sendJsonBody(ResponseStream& out, int status, std::string&& body, const std::string& content_type) {
  HttpResponse r;
  r.status = status;
  r.content_type = content_type;
  r.headers = standardHeaders();
  r.body = withEncoderNewline(std::move(body));
  out.send(std::move(r));
}

void sendRawJson(ResponseStream& out, std::string&& body) {
  HttpResponse r;
  r.headers = standardHeaders();
  r.body = std::move(body);
  out.send(std::move(r));
}

void sendStatusError(const HttpRequest& req, ResponseStream& out, const ApiError& err) {
  HttpResponse r;
  r.status = err.code;
  r.headers = standardHeaders();
  // ErrorNegotiated sets Retry-After before it negotiates, so both forms below carry it.
  if (err.retry_after_seconds > 0) r.headers.emplace_back("Retry-After", std::to_string(err.retry_after_seconds));
  if (errorNegotiatesProtobuf(req.header("accept"))) {
    // The test apiserver serves no object in protobuf, but kube-apiserver writes an error
    // in the negotiated serializer, protobuf included (N2), and so does this one.
    r.content_type = "application/vnd.kubernetes.protobuf";
    r.body = err.toProtobuf();
  } else if (errorMediaTypeNegotiable(req.header("accept"))) {
    r.body = withEncoderNewline(err.toJson());
  } else {
    // WriteObjectNegotiated keeps the error's code when negotiation fails and falls back
    // to WriteRawJSON: json.MarshalIndent, application/json, no trailing newline.
    r.body = indentJson(err.toJson());
    r.allow_gzip = false;
  }
  out.send(std::move(r));
}

// apimachinery path.IsValidPathSegmentName's messages, joined as the key function joins them.
static std::string pathSegmentProblems(const std::string& name) {
  if (name == ".") return "may not be '.'";
  if (name == "..") return "may not be '..'";
  std::string why;
  for (const char* illegal : {"/", "%"}) {
    if (name.find(illegal) == std::string::npos) continue;
    if (!why.empty()) why += ";";
    why += std::string("may not contain '") + illegal + "'";
  }
  return why;
}

bool isDryRun(const HttpRequest& req) {
  auto range = req.query.equal_range("dryRun");
  for (auto it = range.first; it != range.second; ++it)
    if (it->second == "All") return true;
  return false;
}

ApiServer::ApiServer(const ResourceCatalog& catalog, Storage& storage, ApiServerOptions opts)
    : catalog_(catalog), storage_(storage), opts_(std::move(opts)) {
  namespaces_ = catalog_.find("", "v1", "namespaces");
  if (!namespaces_) throw std::runtime_error("resource catalog must serve core v1 namespaces");
}

ApiServer::~ApiServer() {
  std::lock_guard lk(churn_mu_);
  churn_threads_.clear();  // jthreads: request stop and join
}

const ServedResource* ApiServer::findResource(const RequestInfo& info) const {
  return catalog_.find(info.group, info.version, info.resource);
}

// A copy of `req` whose Sec-WebSocket-Protocol is `protocols`: what the WebSocket protocol
// authenticator leaves of it once it took the token out.
static HttpRequest withWebSocketProtocols(const HttpRequest& req, const std::string& protocols) {
  HttpRequest out = req;
  out.headers["sec-websocket-protocol"] = protocols;
  out.first_headers["sec-websocket-protocol"] = protocols;
  return out;
}

void ApiServer::handle(const HttpRequest& req, ResponseStream& out) {
  if (auto ms = slow_ms_.load(); ms > 0 && req.path.rfind("/control/", 0) != 0) {
    bool slowed = true;
    {
      std::lock_guard lk(slow_mu_);
      slowed = req.path.rfind(slow_prefix_, 0) == 0;
    }
    if (slowed) {
      ++slowed_;
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      --slowed_;
    }
  }
  std::optional<std::string> websocket_protocols;
  if (!admit(req, out, websocket_protocols)) return;
  if (websocket_protocols) return route(withWebSocketProtocols(req, *websocket_protocols), out);
  route(req, out);
}

bool ApiServer::admit(const HttpRequest& req, ResponseStream& out, std::optional<std::string>& websocket_protocols) {
  if (!opts_.token.empty() && req.path.rfind("/control/", 0) != 0 &&
      req.header("authorization") != "Bearer " + opts_.token) {
    // The token may also come as a WebSocket subprotocol, as to a real apiserver.
    const auto t = websocket::isWebSocketRequest(req) ? webSocketProtocolToken(req) : WebSocketProtocolToken{};
    if (t.malformed || t.token != opts_.token) {
      sendStatusError(req, out, ApiError{401, "Unauthorized", "Unauthorized"});
      return false;
    }
    websocket_protocols = t.other_protocols;
  }
  const bool public_path = req.path.rfind("/control/", 0) == 0 || req.path == "/control" || req.path == "/healthz" ||
                           req.path == "/readyz" || req.path == "/livez";
  if (opts_.authn && !public_path) {
    // filters.WithAuthentication (401), WithImpersonation, then WithAuthorization (403).
    AuthOutcome auth = authenticateRequest(req);
    if (auth.error) {
      sendStatusError(req, out, *auth.error);
      return false;
    }
    const AccessAttributes attrs = attributesOf(req, parseRequestInfo(req));
    if (!isAllowed(*auth.user, attrs)) {
      sendStatusError(req, out, forbidden(*auth.user, attrs));
      return false;
    }
    if (auth.websocket_protocols) websocket_protocols = auth.websocket_protocols;
  }
  if (opts_.token.empty() && !opts_.authn && req.header("authorization").empty() &&
      websocket::isWebSocketRequest(req)) {
    // No authentication configured: every token is good, and as a real apiserver's
    // authenticator would, it takes a token subprotocol out before the handshake.
    const auto t = webSocketProtocolToken(req);
    if (!t.malformed && !t.token.empty()) websocket_protocols = t.other_protocols;
  }
  return true;
}

void ApiServer::route(const HttpRequest& req, ResponseStream& out) {
  if (req.method == "POST" && (req.path == "/apis/authentication.k8s.io/v1/tokenreviews" ||
                               req.path == "/apis/authorization.k8s.io/v1/subjectaccessreviews")) {
    const bool token = req.path.find("tokenreviews") != std::string::npos;
    ++(token ? counters_.token_reviews : counters_.subject_access_reviews);
    auto [code, body] = token ? tokenReview(req.body) : subjectAccessReview(req.body);
    sendJsonBody(out, code, std::move(body));
    return;
  }
  if (req.path.rfind("/control/", 0) == 0 || req.path == "/control") {
    if (!opts_.enable_control) {
      sendStatusError(req, out, ApiError{404, "NotFound", "the server could not find the requested resource"});
      return;
    }
    handleControl(req, out);
    return;
  }
  if (req.path == "/version" || req.path == "/version/") {
    sendRawJson(out,
                R"({"major":"1","minor":"34","emulationMajor":"1","emulationMinor":"34","minCompatibilityMajor":"1","minCompatibilityMinor":"33","gitVersion":"v1.34.0","gitCommit":"0000000000000000000000000000000000000000","gitTreeState":"clean","buildDate":"2025-08-27T00:00:00Z","goVersion":"go1.24.6","compiler":"gc","platform":"linux/amd64"})");
    return;
  }
  if (req.path == "/healthz" || req.path == "/readyz" || req.path == "/livez") {
    HttpResponse r;
    r.content_type = "text/plain; charset=utf-8";
    r.headers = standardHeaders();
    r.body = "ok";
    out.send(std::move(r));
    return;
  }
  if (req.path.rfind("/openapi/", 0) == 0) {
    if (handleOpenApi(req, out)) return;
  }
  // Read-only CustomResourceDefinitions of the catalog's custom resources (S6).
  if (req.path.rfind("/apis/apiextensions.k8s.io/", 0) == 0 && handleDiscovery(req, out)) return;
  RequestInfo info = parseRequestInfo(req);
  if (info.is_resource_request) {
    handleResource(req, info, out);
    return;
  }
  if (handleDiscovery(req, out)) return;
  sendStatusError(req, out, ApiError{404, "NotFound", "the server could not find the requested resource"});
}

void ApiServer::handleResource(const HttpRequest& req, const RequestInfo& info, ResponseStream& out) {
  const ServedResource* res = findResource(info);
  if (!res) {
    sendStatusError(req, out, ApiError{404, "NotFound", "the server could not find the requested resource"});
    return;
  }
  {
    std::lock_guard lk(counters_.mu);
    ++counters_.requests[info.verb + " " + res->def.qualifiedResource() +
                         (info.subresource.empty() ? "" : "/" + info.subresource)];
  }
  if (!res->def.namespaced && !info.ns.empty()) {
    sendStatusError(req, out, ApiError{404, "NotFound", "the server could not find the requested resource"});
    return;
  }
  if (!info.subresource.empty() && !res->hasSubresource(info.subresource)) {
    sendStatusError(req, out, ApiError{404, "NotFound", "the server could not find the requested resource"});
    return;
  }
  // The registry's key function (NamespaceKeyFunc, NoNamespaceKeyFunc) refuses a name that
  // is no path segment before any lookup: 400, not 404.
  if (const std::string why = pathSegmentProblems(info.name);
      !why.empty() && (info.verb == "get" || info.verb == "update" || info.verb == "patch" || info.verb == "delete")) {
    sendStatusError(req, out, ApiError{400, "BadRequest", "Name parameter invalid: " + goQuote(info.name) + ": " + why});
    return;
  }
  if (!info.subresource.empty()) {
    if (info.subresource == "log") return handlePodLog(req, info, *res, out);
    if (info.subresource == "exec") return handlePodExec(req, info, *res, out);
    if (info.subresource == "scale") return handleScale(req, info, *res, out);
  }
  const auto& v = info.verb;
  if (v == "get") return handleGet(req, info, *res, out);
  if (v == "list") return handleList(req, info, *res, out);
  if (v == "watch") return handleWatch(req, info, *res, out);
  if (v == "create") {
    if (!info.name.empty()) {
      sendStatusError(req, out, ApiError{405, "MethodNotAllowed", "the server does not allow this method on the requested resource"});
      return;
    }
    return handleCreate(req, info, *res, out);
  }
  if (v == "update") return handleUpdate(req, info, *res, out);
  if (v == "patch") return handlePatch(req, info, *res, out);
  if (v == "delete") return handleDelete(req, info, *res, out);
  if (v == "deletecollection") return handleDeleteCollection(req, info, *res, out);
  sendStatusError(req, out, ApiError{405, "MethodNotAllowed", "the server does not allow this method on the requested resource"});
}

}  // namespace testapi
