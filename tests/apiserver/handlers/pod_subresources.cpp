// Subresources with their own wire formats: pods/log (text, optionally followed),
// pods/exec (WebSocket channel protocol v4/v5) and the scale subresource.
#include <chrono>
#include <thread>

#include "tests/apiserver/handlers/api_server.h"

namespace testapi {
namespace {

constexpr int kLogLines = 5;
constexpr auto kFollowInterval = std::chrono::seconds(1);
// Channel protocol (k8s.io/apimachinery/pkg/util/remotecommand): one leading byte per message.
constexpr char kStdin = 0, kStdout = 1, kErrorChannel = 3;
// A real exec's first output comes after the apiserver has dialed the kubelet and the
// runtime has started the process: many milliseconds after the upgrade. client-go creates
// its stream readers only after the upgrade and discards ("Unknown stream id") a frame
// that arrives first, so output written at once made kubectl exec fail now and then,
// most often through a chain of proxies that delivers the 101 and the frame together.
constexpr auto kProcessStart = std::chrono::milliseconds(100);
constexpr unsigned char kCloseChannel = 255;  // v5: "close this stream" signal

std::string logLine(const std::string& pod, const std::string& container, int n) {
  return nowRfc3339() + " " + pod + "/" + container + ": log line " + std::to_string(n) + "\n";
}

std::string firstContainer(const StoredObject& pod) {
  rapidjson::Document d;
  parseStored(pod, d);
  if (auto* spec = member(d, "spec"))
    if (auto* cs = member(*spec, "containers"); cs && cs->IsArray() && !cs->Empty())
      return stringMember((*cs)[0], "name");
  return "main";
}

std::string scaleJson(const ServedResource& res, const StoredObject& obj) {
  rapidjson::Document d;
  parseStored(obj, d);
  int64_t replicas = 1, status_replicas = 0;
  std::string selector;
  if (auto* spec = member(d, "spec")) {
    if (auto* r = member(*spec, "replicas"); r && r->IsInt64()) replicas = r->GetInt64();
    if (auto* sel = member(*spec, "selector"))
      if (auto* ml = member(*sel, "matchLabels"); ml && ml->IsObject())
        for (auto it = ml->MemberBegin(); it != ml->MemberEnd(); ++it) {
          if (!selector.empty()) selector += ",";
          selector += std::string(it->name.GetString()) + "=" + (it->value.IsString() ? it->value.GetString() : "");
        }
  }
  if (auto* st = member(d, "status"))
    if (auto* r = member(*st, "replicas"); r && r->IsInt64()) status_replicas = r->GetInt64();
  auto& meta = d["metadata"];
  std::string s = R"({"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":)" + jsonQuote(obj.name);
  if (res.def.namespaced) s += ",\"namespace\":" + jsonQuote(obj.ns);
  s += ",\"uid\":" + jsonQuote(obj.uid) + ",\"resourceVersion\":\"" + std::to_string(obj.rv) + "\"";
  s += ",\"creationTimestamp\":" + jsonQuote(stringMember(meta, "creationTimestamp")) + "}";
  s += ",\"spec\":{\"replicas\":" + std::to_string(replicas) + "}";
  s += ",\"status\":{\"replicas\":" + std::to_string(status_replicas) + ",\"selector\":" + jsonQuote(selector) + "}}";
  return s;
}

}  // namespace

void ApiServer::handlePodLog(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                             ResponseStream& out) {
  if (info.verb != "get") return sendStatusError(req, out, ApiError{405, "MethodNotAllowed", "the server does not allow this method on the requested resource"});
  auto pod = storage_.get(res, info.ns, info.name);
  if (!pod) return sendStatusError(req, out, notFound(res.def, info.name));
  std::string container = req.param("container") ? *req.param("container") : firstContainer(*pod);
  bool follow = req.param("follow") && parseQueryBool(*req.param("follow"));
  if (!follow) {
    HttpResponse r;
    r.content_type = "text/plain";
    r.headers = standardHeaders();
    for (int i = 1; i <= kLogLines; ++i) r.body += logLine(info.name, container, i);
    out.send(std::move(r));
    return;
  }
  if (!out.startChunked(200, "text/plain", standardHeaders())) return;
  std::string first;
  for (int i = 1; i <= kLogLines; ++i) first += logLine(info.name, container, i);
  if (!out.writeChunk(first)) return;
  // follow=true: a line every second until the client goes or the pod is deleted.
  for (int n = kLogLines + 1;; ++n) {
    auto until = std::chrono::steady_clock::now() + kFollowInterval;
    while (std::chrono::steady_clock::now() < until) {
      if (out.peerClosed()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!storage_.get(res, info.ns, info.name)) break;
    if (!out.writeChunk(logLine(info.name, container, n))) return;
  }
  out.finishChunked();
}

void ApiServer::handlePodExec(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                              ResponseStream& out) {
  auto pod = storage_.get(res, info.ns, info.name);
  if (!pod) return sendStatusError(req, out, notFound(res.def, info.name));
  std::string upgrade = req.header("upgrade");
  for (auto& c : upgrade) c = static_cast<char>(::tolower(static_cast<unsigned char>(c)));
  if (upgrade != "websocket")
    return sendStatusError(req, out, badRequest("Upgrade request required"));
  const std::string offered = req.header("sec-websocket-protocol");
  std::string proto;
  for (const char* p : {"v5.channel.k8s.io", "v4.channel.k8s.io"})
    if (offered.find(p) != std::string::npos) {
      proto = p;
      break;
    }
  if (proto.empty()) return sendStatusError(req, out, badRequest("unable to upgrade: no supported subprotocol offered"));
  std::vector<std::string> command;
  auto range = req.query.equal_range("command");
  for (auto it = range.first; it != range.second; ++it) command.push_back(it->second);
  const bool with_stdin = req.param("stdin") && parseQueryBool(*req.param("stdin"));

  out.acceptWebSocket(proto, [&](WebSocketChannel& ws) {
    // Behaves like `echo`: the command's arguments (or all words) on stdout.
    size_t first = (!command.empty() && command[0] == "echo") ? 1 : 0;
    std::string line;
    for (size_t i = first; i < command.size(); ++i) line += (i > first ? " " : "") + command[i];
    std::this_thread::sleep_for(kProcessStart);
    if (!line.empty() || first == 1) ws.write(std::string(1, kStdout) + line + "\n");
    if (with_stdin) {
      std::string msg;
      while (ws.read(msg)) {
        if (msg.empty()) continue;
        if (static_cast<unsigned char>(msg[0]) == kCloseChannel) break;  // stdin closed (v5)
        if (msg[0] == kStdin && msg.size() > 1 && !ws.write(std::string(1, kStdout) + msg.substr(1))) return;
      }
    }
    ws.write(std::string(1, kErrorChannel) + R"({"metadata":{},"status":"Success"})");
    ws.close();
  });
}

void ApiServer::handleScale(const HttpRequest& req, const RequestInfo& info, const ServedResource& res,
                            ResponseStream& out) {
  if (info.verb == "get") {
    auto obj = storage_.get(res, info.ns, info.name);
    if (!obj) return sendStatusError(req, out, notFound(res.def, info.name));
    return sendJsonBody(out, 200, scaleJson(res, *obj));
  }
  if (info.verb != "update" && info.verb != "patch")
    return sendStatusError(req, out, ApiError{405, "MethodNotAllowed", "the server does not allow this method on the requested resource"});
  rapidjson::Document body;
  body.Parse(req.body.data(), req.body.size());
  if (body.HasParseError() || !body.IsObject()) return sendStatusError(req, out, badRequest("error decoding Scale"));
  auto* spec = member(body, "spec");
  auto* replicas = spec ? member(*spec, "replicas") : nullptr;
  if (!replicas || !replicas->IsInt64()) return sendStatusError(req, out, badRequest("spec.replicas is required"));
  const int64_t want = replicas->GetInt64();
  auto r = updateObject(res, info, "",
                        [&](const StoredObject& current, rapidjson::Document& doc) -> Result<bool> {
                          parseStored(current, doc);
                          auto& s = ensureObject(doc, "spec", doc.GetAllocator());
                          s.RemoveMember("replicas");
                          s.AddMember("replicas", want, doc.GetAllocator());
                          doc["metadata"].RemoveMember("resourceVersion");
                          return true;
                        },
                        isDryRun(req), false);
  if (auto* e = std::get_if<ApiError>(&r)) return sendStatusError(req, out, *e);
  sendJsonBody(out, 200, scaleJson(res, *std::get<StoredObjectPtr>(r)));
}

}  // namespace testapi
