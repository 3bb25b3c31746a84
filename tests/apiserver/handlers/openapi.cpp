// OpenAPI (N5): /openapi/v3 index and one document per group version.
//
// kubectl 1.32 reads the v3 document of a group version to decide whether the server
// validates fields itself: it looks for the PATCH operation tagged with the object's
// x-kubernetes-group-version-kind and a `fieldValidation` query parameter. With that
// present it sends fieldValidation=Strict and skips client-side schema validation.
// No schemas are published, so `kubectl apply` computes strategic merge patches
// from its compiled-in types (built-ins) or uses JSON merge patches (custom resources).
#include <functional>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "tests/apiserver/handlers/api_server.h"

namespace testapi {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

std::string docPath(const std::string& gv) { return gv.find('/') == std::string::npos ? "api/" + gv : "apis/" + gv; }

void parameter(Writer& w, const char* name, const char* in) {
  w.StartObject();
  w.Key("name"); w.String(name);
  w.Key("in"); w.String(in);
  if (std::string_view(in) == "path") { w.Key("required"); w.Bool(true); }
  w.Key("schema"); w.StartObject(); w.Key("type"); w.String("string"); w.Key("uniqueItems"); w.Bool(true); w.EndObject();
  w.EndObject();
}

void operation(Writer& w, const char* method, const char* action, const ServedResource& r, bool item, bool write) {
  w.Key(method);
  w.StartObject();
  w.Key("operationId"); w.String((std::string(action) + r.def.kind).c_str());
  w.Key("parameters");
  w.StartArray();
  if (r.def.namespaced) parameter(w, "namespace", "path");
  if (item) parameter(w, "name", "path");
  if (write) {
    parameter(w, "dryRun", "query");
    parameter(w, "fieldManager", "query");
    parameter(w, "fieldValidation", "query");
    if (std::string_view(method) == "patch") parameter(w, "force", "query");
  }
  w.EndArray();
  w.Key("responses");
  w.StartObject();
  w.Key("200"); w.StartObject(); w.Key("description"); w.String("OK"); w.EndObject();
  w.EndObject();
  w.Key("x-kubernetes-action"); w.String(action);
  w.Key("x-kubernetes-group-version-kind");
  w.StartObject();
  w.Key("group"); w.String(r.def.group.c_str());
  w.Key("kind"); w.String(r.def.kind.c_str());
  w.Key("version"); w.String(r.def.version.c_str());
  w.EndObject();
  w.EndObject();
}

std::string groupVersionDocument(const ResourceCatalog& cat, const std::string& gv) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("openapi"); w.String("3.0.0");
  w.Key("info"); w.StartObject(); w.Key("title"); w.String("Kubernetes"); w.Key("version"); w.String("v1.34.0"); w.EndObject();
  w.Key("paths");
  w.StartObject();
  for (const auto& r : cat.resources()) {
    if (r.def.groupVersion() != gv) continue;
    std::string base = "/" + docPath(gv) + (r.def.namespaced ? "/namespaces/{namespace}/" : "/") + r.def.resource;
    w.Key(base.c_str());
    w.StartObject();
    operation(w, "get", "list", r, false, false);
    operation(w, "post", "post", r, false, true);
    operation(w, "delete", "deletecollection", r, false, false);
    w.EndObject();
    w.Key((base + "/{name}").c_str());
    w.StartObject();
    operation(w, "get", "get", r, true, false);
    operation(w, "put", "put", r, true, true);
    operation(w, "patch", "patch", r, true, true);
    operation(w, "delete", "delete", r, true, false);
    w.EndObject();
  }
  w.EndObject();
  w.Key("components"); w.StartObject(); w.Key("schemas"); w.StartObject(); w.EndObject(); w.EndObject();
  w.EndObject();
  return sb.GetString();
}

std::string hashOf(const std::string& s) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016zX", std::hash<std::string>{}(s));
  return buf;
}

}  // namespace

bool ApiServer::handleOpenApi(const HttpRequest& req, ResponseStream& out) {
  std::string path = req.path;
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path == "/openapi/v3") {
    rapidjson::StringBuffer sb;
    Writer w(sb);
    w.StartObject();
    w.Key("paths");
    w.StartObject();
    for (const auto& gv : catalog_.groupVersions()) {
      std::string p = docPath(gv);
      w.Key(p.c_str());
      w.StartObject();
      w.Key("serverRelativeURL");
      w.String(("/openapi/v3/" + p + "?hash=" + hashOf(groupVersionDocument(catalog_, gv))).c_str());
      w.EndObject();
    }
    w.EndObject();
    w.EndObject();
    sendRawJson(out, sb.GetString());
    return true;
  }
  const std::string prefix = "/openapi/v3/";
  if (path.rfind(prefix, 0) == 0) {
    std::string p = path.substr(prefix.size());
    for (const auto& gv : catalog_.groupVersions()) {
      if (docPath(gv) != p) continue;
      HttpResponse r;
      r.headers = standardHeaders();
      r.headers[0].second = "public, immutable";  // documents are immutable per hash
      r.headers.emplace_back("Etag", "\"" + hashOf(groupVersionDocument(catalog_, gv)) + "\"");
      r.body = groupVersionDocument(catalog_, gv);
      out.send(std::move(r));
      return true;
    }
  }
  return false;
}

}  // namespace testapi
