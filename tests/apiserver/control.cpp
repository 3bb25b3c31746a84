// /control/* endpoints (--enable-control): counters and fault injection for tests.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "api_server.h"
#include "http_server.h"

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
  if (op == "counters") {
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
    w.EndObject();
    return sendJsonBody(out, 200, sb.GetString());
  }
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
  if (op == "slow") {
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

}  // namespace testapi
