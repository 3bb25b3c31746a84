// /control/* endpoints (--enable-control): counters and fault injection for tests.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "tests/apiserver/handlers/api_server.h"
#include "tests/apiserver/http/http_server.h"

namespace testapi {
namespace {

int64_t intParam(const HttpRequest& req, const char* name, int64_t fallback) {
  auto* v = req.param(name);
  if (!v || v->empty()) return fallback;
  try {
    return std::stoll(*v);
  } catch (...) {
    return fallback;
  }
}

std::string strParam(const HttpRequest& req, const char* name) {
  auto* v = req.param(name);
  return v ? *v : std::string();
}

}  // namespace

// control/counters: requests, open watches, the last watches, reviews and RVs.
std::string ApiServer::countersJson() {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("requests");
  w.StartObject();
  {
    std::lock_guard lk(counters_.mu);
    for (const auto& [k, v] : counters_.requests) {
      w.Key(k.c_str());
      w.Uint64(v);
    }
  }
  w.EndObject();
  w.Key("slowed");
  w.Int64(slowed_.load());
  w.Key("openWatches");
  w.StartObject();
  for (const auto& [k, v] : storage_.openWatchCounts()) {
    w.Key(k.c_str());
    w.Uint64(v);
  }
  w.EndObject();
  w.Key("recentWatches");
  w.StartArray();
  {
    std::lock_guard lk(counters_.mu);
    for (const auto& record : counters_.recent_watches) {
      w.StartObject();
      w.Key("resource"); w.String(record.resource.c_str());
      w.Key("resourceVersion"); w.String(record.resource_version.c_str());
      w.Key("sendInitialEvents"); w.String(record.send_initial_events.c_str());
      w.EndObject();
    }
  }
  w.EndArray();
  w.Key("lists"); w.Uint64(counters_.lists);
  w.Key("watches"); w.Uint64(counters_.watches);
  w.Key("tokenReviews"); w.Uint64(counters_.token_reviews);
  w.Key("subjectAccessReviews"); w.Uint64(counters_.subject_access_reviews);
  w.Key("resourceVersion"); w.String(std::to_string(storage_.currentRv()).c_str());
  w.Key("compactedResourceVersion"); w.String(std::to_string(storage_.compactedRv()).c_str());
  // The oldest RV a watch resumes from: the later of the compaction and the last restart.
  w.Key("watchWindowResourceVersion"); w.String(std::to_string(storage_.watchWindowStartRv()).c_str());
  w.EndObject();
  return sb.GetString();
}

void ApiServer::handleControl(const HttpRequest& req, ResponseStream& out) {
  const std::string op = req.path.substr(std::string("/control/").size());
  auto ok = [&](const std::string& extra = "") {
    sendJsonBody(out, 200, R"({"ok":true)" + extra + ",\"resourceVersion\":\"" + std::to_string(storage_.currentRv()) + "\"}");
  };
  auto findRes = [&](const std::string& name) -> const ServedResource* {
    for (const auto& r : catalog_.resources())
      if (r.def.resource == name || r.def.qualifiedResource() == name) return &r;
    return nullptr;
  };
  if (op == "counters") return sendJsonBody(out, 200, countersJson());
  if (op == "compact") {
    storage_.compact();
    return ok();
  }
  if (op == "drop-watches") {
    size_t n = storage_.dropWatches();
    return ok(",\"dropped\":" + std::to_string(n));
  }
  if (op == "refuse") {
    int64_t s = intParam(req, "seconds", 5);
    ok();
    if (http_) http_->refuseUntil(std::chrono::steady_clock::now() + std::chrono::seconds(s));
    return;
  }
  if (op == "restart") return restartApiServer(req, out);
  if (op == "slow") {
    {
      std::lock_guard lk(slow_mu_);
      slow_prefix_ = strParam(req, "path");
    }
    slow_ms_ = intParam(req, "ms", 0);
    return ok();
  }
  if (op == "load") {
    const auto* res = findRes(strParam(req, "resource").empty() ? "pods" : strParam(req, "resource"));
    if (!res) return sendStatusError(req, out, badRequest("unknown resource"));
    auto start = std::chrono::steady_clock::now();
    size_t n = loadObjects(*res, static_cast<size_t>(intParam(req, "count", 100)),
                           static_cast<size_t>(intParam(req, "namespaces", 10)), static_cast<size_t>(intParam(req, "nodes", 10)));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return ok(",\"created\":" + std::to_string(n) + ",\"seconds\":" + std::to_string(secs));
  }
  if (op == "churn") {
    startChurn(static_cast<double>(intParam(req, "rate", 10)), static_cast<int>(intParam(req, "seconds", 10)));
    return ok();
  }
  if (op == "silent-update") {
    const auto* res = findRes(strParam(req, "resource"));
    if (!res) return sendStatusError(req, out, badRequest("unknown resource"));
    bool done = storage_.silentUpdate(*res, strParam(req, "namespace"), strParam(req, "name"),
                                      [&](const StoredObject& cur, uint64_t rv) {
                                        rapidjson::Document d;
                                        parseStored(cur, d);
                                        auto& meta = ensureObject(d, "metadata", d.GetAllocator());
                                        auto& ann = ensureObject(meta, "annotations", d.GetAllocator());
                                        setString(ann, "kube-test-apiserver/silent-update", std::to_string(rv), d.GetAllocator());
                                        setString(meta, "resourceVersion", std::to_string(rv), d.GetAllocator());
                                        return makeStored(*res, d);
                                      });
    if (!done) return sendStatusError(req, out, notFound(res->def, strParam(req, "name")));
    return ok();
  }
  sendStatusError(req, out, ApiError{404, "NotFound", "the server could not find the requested resource"});
}

// control/restart?seconds=N: what clients see of a kube-apiserver restart. Open watches
// are cut (W6: no last chunk, no close frame) and every other connection drops, as when
// the old process exits; with N > 0 no connection is served for N seconds (as
// control/refuse). The rebuilt watch caches start one revision past the last one (see
// Storage::restart), so a watch resumed from any RV seen before gets the 410 ERROR event
// "too old resource version: N (M)" with M = the answer's restartResourceVersion, while
// RV unset/0 watches and LISTs at any RV still answer (NotOlderThan from the cache,
// Exact from etcd).
void ApiServer::restartApiServer(const HttpRequest& req, ResponseStream& out) {
  const int64_t seconds = intParam(req, "seconds", 0);
  if (http_ && seconds > 0) http_->refuseNewUntil(std::chrono::steady_clock::now() + std::chrono::seconds(seconds));
  const uint64_t restart_rv = storage_.restart();
  // The connections open now; a client's next request, on a connection it opens once it
  // has this answer, must not be cut with them.
  const uint64_t open_before = http_ ? http_->lastConnection() : 0;
  sendJsonBody(out, 200, R"({"ok":true,"restartResourceVersion":")" + std::to_string(restart_rv) +
                             R"(","resourceVersion":")" + std::to_string(storage_.currentRv()) + "\"}");
  // Each cut stream drops its own connection; the rest (keep-alive ones, this one once
  // answered) go now.
  if (http_) http_->closeConnections(open_before);
}

}  // namespace testapi
