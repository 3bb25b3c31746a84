// Discovery (N5): legacy /api, /apis, /api/v1, /apis/<g>[/<v>] and aggregated
// discovery v2 (APIGroupDiscoveryList with ETag / 304), all derived from the catalog.
#include <algorithm>
#include <functional>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "tests/apiserver/handlers/api_server.h"

namespace testapi {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

const std::vector<std::string> kVerbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};

struct SubresourceInfo {
  std::string group, version, kind;
  std::vector<std::string> verbs;
};

SubresourceInfo subresourceInfo(const ServedResource& r, const std::string& sub) {
  if (sub == "scale") return {"autoscaling", "v1", "Scale", {"get", "patch", "update"}};
  if (sub == "log") return {"", "", "Pod", {"get"}};
  if (sub == "exec") return {"", "", "PodExecOptions", {"create", "get"}};
  return {"", "", r.def.kind, {"get", "patch", "update"}};
}

void strings(Writer& w, const char* key, const std::vector<std::string>& v, bool omit_empty = true) {
  if (omit_empty && v.empty()) return;
  w.Key(key);
  w.StartArray();
  for (const auto& s : v) w.String(s.c_str());
  w.EndArray();
}

std::string resourceList(const ResourceCatalog& cat, const std::string& gv) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("kind"); w.String("APIResourceList");
  w.Key("apiVersion"); w.String("v1");
  w.Key("groupVersion"); w.String(gv.c_str());
  w.Key("resources");
  w.StartArray();
  for (const auto& r : cat.resources()) {
    if (r.def.groupVersion() != gv) continue;
    w.StartObject();
    w.Key("name"); w.String(r.def.resource.c_str());
    w.Key("singularName"); w.String(r.def.singular.c_str());
    w.Key("namespaced"); w.Bool(r.def.namespaced);
    w.Key("kind"); w.String(r.def.kind.c_str());
    strings(w, "verbs", kVerbs, false);
    strings(w, "shortNames", r.def.short_names);
    strings(w, "categories", r.def.categories);
    w.EndObject();
    for (const auto& sub : r.def.subresources) {
      auto si = subresourceInfo(r, sub);
      w.StartObject();
      w.Key("name"); w.String((r.def.resource + "/" + sub).c_str());
      w.Key("singularName"); w.String("");
      w.Key("namespaced"); w.Bool(r.def.namespaced);
      if (!si.group.empty()) { w.Key("group"); w.String(si.group.c_str()); }
      if (!si.version.empty()) { w.Key("version"); w.String(si.version.c_str()); }
      w.Key("kind"); w.String(si.kind.c_str());
      strings(w, "verbs", si.verbs, false);
      w.EndObject();
    }
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

void groupObject(Writer& w, const ResourceCatalog& cat, const std::string& group) {
  w.StartObject();
  w.Key("name"); w.String(group.c_str());
  w.Key("versions");
  w.StartArray();
  std::string first;
  for (const auto& gv : cat.groupVersions()) {
    if (gv.rfind(group + "/", 0) != 0) continue;
    if (first.empty()) first = gv;
    w.StartObject();
    w.Key("groupVersion"); w.String(gv.c_str());
    w.Key("version"); w.String(gv.substr(group.size() + 1).c_str());
    w.EndObject();
  }
  w.EndArray();
  w.Key("preferredVersion");
  w.StartObject();
  w.Key("groupVersion"); w.String(first.c_str());
  w.Key("version"); w.String(first.substr(group.size() + 1).c_str());
  w.EndObject();
  w.EndObject();
}

void responseKind(Writer& w, const std::string& g, const std::string& v, const std::string& k) {
  w.Key("responseKind");
  w.StartObject();
  w.Key("group"); w.String(g.c_str());
  w.Key("version"); w.String(v.c_str());
  w.Key("kind"); w.String(k.c_str());
  w.EndObject();
}

// apidiscovery.k8s.io/v2 APIGroupDiscoveryList for the core group (legacy=true) or all named groups.
std::string aggregated(const ResourceCatalog& cat, bool legacy) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("kind"); w.String("APIGroupDiscoveryList");
  w.Key("apiVersion"); w.String("apidiscovery.k8s.io/v2");
  w.Key("metadata"); w.StartObject(); w.EndObject();
  w.Key("items");
  w.StartArray();
  std::vector<std::string> groups = legacy ? std::vector<std::string>{""} : cat.groups();
  for (const auto& g : groups) {
    w.StartObject();
    w.Key("metadata");
    w.StartObject();
    if (!g.empty()) { w.Key("name"); w.String(g.c_str()); }
    w.Key("creationTimestamp"); w.Null();
    w.EndObject();
    w.Key("versions");
    w.StartArray();
    for (const auto& gv : cat.groupVersions()) {
      if (g.empty() ? gv.find('/') != std::string::npos : gv.rfind(g + "/", 0) != 0) continue;
      std::string version = g.empty() ? gv : gv.substr(g.size() + 1);
      w.StartObject();
      w.Key("version"); w.String(version.c_str());
      w.Key("resources");
      w.StartArray();
      for (const auto& r : cat.resources()) {
        if (r.def.groupVersion() != gv) continue;
        w.StartObject();
        w.Key("resource"); w.String(r.def.resource.c_str());
        responseKind(w, r.def.group, r.def.version, r.def.kind);
        w.Key("scope"); w.String(r.def.namespaced ? "Namespaced" : "Cluster");
        w.Key("singularResource"); w.String(r.def.singular.c_str());
        strings(w, "verbs", kVerbs, false);
        strings(w, "shortNames", r.def.short_names);
        strings(w, "categories", r.def.categories);
        if (!r.def.subresources.empty()) {
          w.Key("subresources");
          w.StartArray();
          for (const auto& sub : r.def.subresources) {
            auto si = subresourceInfo(r, sub);
            w.StartObject();
            w.Key("subresource"); w.String(sub.c_str());
            responseKind(w, si.group.empty() ? r.def.group : si.group, si.version.empty() ? r.def.version : si.version, si.kind);
            strings(w, "verbs", si.verbs, false);
            w.EndObject();
          }
          w.EndArray();
        }
        w.EndObject();
      }
      w.EndArray();
      w.Key("freshness"); w.String("Current");
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

// A CustomResourceDefinition for every custom (builtin: false) resource of the catalog,
// one per group/resource with all its versions, as GET on apiextensions.k8s.io/v1 returns it.
std::vector<std::pair<std::string, std::string>> customResourceDefinitions(const ResourceCatalog& cat) {
  std::vector<std::pair<std::string, std::string>> out;  // name, JSON
  std::vector<std::string> names;
  for (const auto& r : cat.resources()) {
    if (r.def.builtin) continue;
    const std::string name = r.def.resource + "." + r.def.group;
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    names.push_back(name);
    rapidjson::StringBuffer sb;
    Writer w(sb);
    w.StartObject();
    w.Key("kind"); w.String("CustomResourceDefinition");
    w.Key("apiVersion"); w.String("apiextensions.k8s.io/v1");
    w.Key("metadata"); w.StartObject();
    w.Key("name"); w.String(name.c_str());
    w.Key("resourceVersion"); w.String("1");
    w.Key("generation"); w.Int(1);
    w.EndObject();
    w.Key("spec"); w.StartObject();
    w.Key("group"); w.String(r.def.group.c_str());
    w.Key("names"); w.StartObject();
    w.Key("plural"); w.String(r.def.resource.c_str());
    w.Key("singular"); w.String(r.def.singular.c_str());
    strings(w, "shortNames", r.def.short_names);
    w.Key("kind"); w.String(r.def.kind.c_str());
    w.Key("listKind"); w.String(r.def.list_kind.c_str());
    strings(w, "categories", r.def.categories);
    w.EndObject();
    w.Key("scope"); w.String(r.def.namespaced ? "Namespaced" : "Cluster");
    w.Key("versions"); w.StartArray();
    bool storage = true;
    for (const auto& v : cat.resources()) {
      if (v.def.builtin || v.def.group != r.def.group || v.def.resource != r.def.resource) continue;
      w.StartObject();
      w.Key("name"); w.String(v.def.version.c_str());
      w.Key("served"); w.Bool(true);
      w.Key("storage"); w.Bool(storage);
      storage = false;
      if (!v.def.selectable_fields.empty()) {
        w.Key("selectableFields"); w.StartArray();
        for (const auto& f : v.def.selectable_fields) {
          w.StartObject();
          w.Key("jsonPath"); w.String(("." + f).c_str());
          w.EndObject();
        }
        w.EndArray();
      }
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    w.EndObject();
    out.emplace_back(name, sb.GetString());
  }
  return out;
}

bool wantsAggregated(const std::string& accept) {
  // The first acceptable entry decides; clients list v2 first when they support it.
  auto pos = accept.find("as=APIGroupDiscoveryList");
  if (pos == std::string::npos) return false;
  auto start = accept.rfind(',', pos);
  auto end = accept.find(',', pos);
  std::string entry = accept.substr(start == std::string::npos ? 0 : start + 1,
                                    end == std::string::npos ? std::string::npos : end - (start == std::string::npos ? 0 : start + 1));
  return entry.find("v=v2") != std::string::npos && entry.find("v=v2beta1") == std::string::npos &&
         entry.find("g=apidiscovery.k8s.io") != std::string::npos;
}

}  // namespace

bool ApiServer::handleDiscovery(const HttpRequest& req, ResponseStream& out) {
  const std::string& p = req.path;
  std::string path = p.size() > 1 && p.back() == '/' ? p.substr(0, p.size() - 1) : p;
  const std::string crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  if (path == crds) {
    std::string body = R"({"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","metadata":{"resourceVersion":"1"},"items":[)";
    bool first = true;
    for (const auto& [name, json] : customResourceDefinitions(catalog_)) {
      body += first ? "" : ",";
      body += json;
      first = false;
    }
    sendJsonBody(out, 200, body + "]}");
    return true;
  }
  if (path.rfind(crds + "/", 0) == 0) {
    const std::string name = path.substr(crds.size() + 1);
    for (const auto& [crd_name, json] : customResourceDefinitions(catalog_)) {
      if (crd_name != name) continue;
      sendJsonBody(out, 200, std::string(json));
      return true;
    }
    ApiError error{404, "NotFound", "customresourcedefinitions.apiextensions.k8s.io \"" + name + "\" not found"};
    error.name = name;
    error.group = "apiextensions.k8s.io";
    error.kind = "customresourcedefinitions";
    sendStatusError(req, out, error);
    return true;
  }
  if ((path == "/api" || path == "/apis") && wantsAggregated(req.header("accept"))) {
    std::string body = withEncoderNewline(aggregated(catalog_, path == "/api"));
    std::string etag = "\"" + std::to_string(std::hash<std::string>{}(body)) + "\"";
    HttpResponse r;
    r.headers = {{"Cache-Control", "public"}, {"ETag", etag}, {"Vary", "Accept"}, {"Audit-Id", newUid()}};
    if (req.header("if-none-match") == etag) {
      // The apiserver answers before it negotiates: the validators, no Content-Type.
      r.status = 304;
      r.content_type.clear();
      out.send(std::move(r));
      return true;
    }
    r.content_type = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    r.body = std::move(body);
    out.send(std::move(r));
    return true;
  }
  if (path == "/api") {
    std::string addr = opts_.server_address.empty() ? "127.0.0.1:6443" : opts_.server_address;
    sendJsonBody(out, 200, R"({"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":")" + addr + "\"}]}");
    return true;
  }
  if (path == "/api/v1") {
    sendJsonBody(out, 200, resourceList(catalog_, "v1"));
    return true;
  }
  if (path == "/apis") {
    rapidjson::StringBuffer sb;
    Writer w(sb);
    w.StartObject();
    w.Key("kind"); w.String("APIGroupList");
    w.Key("apiVersion"); w.String("v1");
    w.Key("groups");
    w.StartArray();
    for (const auto& g : catalog_.groups()) groupObject(w, catalog_, g);
    w.EndArray();
    w.EndObject();
    sendJsonBody(out, 200, sb.GetString());
    return true;
  }
  if (path.rfind("/apis/", 0) == 0) {
    std::string rest = path.substr(6);
    auto slash = rest.find('/');
    std::string group = rest.substr(0, slash);
    auto groups = catalog_.groups();
    if (std::find(groups.begin(), groups.end(), group) == groups.end()) return false;
    if (slash == std::string::npos) {
      rapidjson::StringBuffer sb;
      Writer w(sb);
      groupObject(w, catalog_, group);
      std::string body = sb.GetString();
      sendJsonBody(out, 200, R"({"kind":"APIGroup","apiVersion":"v1",)" + body.substr(1));
      return true;
    }
    std::string gv = rest;
    auto gvs = catalog_.groupVersions();
    if (std::find(gvs.begin(), gvs.end(), gv) == gvs.end()) return false;
    sendJsonBody(out, 200, resourceList(catalog_, gv));
    return true;
  }
  return false;
}

}  // namespace testapi
