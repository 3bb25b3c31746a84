// The per-type field selector tables (S4-S6): the accepted labels of each type's
// field label conversion with its error text, and the registry's selectable field
// set computed from a stored object. Upstream keeps these in two places (conversion
// funcs and registry strategies); a field accepted by the first but absent from the
// second compares as "" (status.podIPs).
#include "tests/apiserver/selectors/field_selector_rules.h"
#include "tests/apiserver/semantics.h"
#include "tests/apiserver/status/status_util.h"

#include <cstdio>
#include <functional>

namespace testapi {

namespace {

// How a type answers an unsupported label.
enum class Family {
  Default,         // runtime.DefaultMetaV1FieldSelectorConversion (no conversion func)
  Core,            // "field label not supported: <f>" (core/v1, certificates, events.k8s.io, CRDs)
  BatchJob,        // batch/v1 Job
  ResourceSlice,   // resource.k8s.io ResourceSlice
};

struct Rules {
  Family family = Family::Default;
  std::vector<std::pair<std::string, std::string>> accepted;  // label -> canonical field
};

void accept(Rules& r, std::initializer_list<const char*> labels) {
  for (const char* l : labels) r.accepted.emplace_back(l, l);
}

const std::vector<const char*> kInvolvedObjectFields = {"kind", "namespace", "name", "uid", "apiVersion",
                                                        "resourceVersion", "fieldPath"};

Rules rulesFor(const ResourceDef& def) {
  Rules r;
  if (!def.builtin) {  // S6: CRD selectableFields
    r.family = Family::Core;
    accept(r, {"metadata.name"});
    if (def.namespaced) accept(r, {"metadata.namespace"});
    for (const auto& f : def.selectable_fields) r.accepted.emplace_back(f, f);
    return r;
  }
  const std::string& g = def.group;
  const std::string& res = def.resource;
  if (g.empty()) {
    r.family = Family::Core;
    if (res == "pods") {
      accept(r, {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                 "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
                 "status.nominatedNodeName"});
      r.accepted.emplace_back("spec.host", "spec.nodeName");  // old v1 clients
    } else if (res == "nodes") {
      accept(r, {"metadata.name", "spec.unschedulable"});
    } else if (res == "namespaces") {
      accept(r, {"metadata.name", "status.phase"});
    } else if (res == "secrets") {
      accept(r, {"metadata.name", "metadata.namespace", "type"});
    } else if (res == "services") {
      accept(r, {"metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"});
    } else if (res == "replicationcontrollers") {
      accept(r, {"metadata.name", "metadata.namespace", "status.replicas"});
    } else if (res == "events") {
      accept(r, {"metadata.name", "metadata.namespace", "reason", "reportingComponent", "source", "type"});
      for (const char* f : kInvolvedObjectFields) accept(r, {("involvedObject." + std::string(f)).c_str()});
    } else {
      r.family = Family::Default;
    }
    return r;
  }
  if (g == "batch" && res == "jobs") {
    r.family = Family::BatchJob;
    accept(r, {"metadata.name", "metadata.namespace", "status.successful"});
  } else if (g == "certificates.k8s.io" && res == "certificatesigningrequests") {
    r.family = Family::Core;
    accept(r, {"metadata.name", "spec.signerName"});
  } else if (g == "resource.k8s.io" && res == "resourceslices") {
    r.family = Family::ResourceSlice;
    accept(r, {"metadata.name", "spec.nodeName", "spec.driver"});
  } else if (g == "events.k8s.io" && res == "events") {
    // events.k8s.io maps its names onto the core Event fields the registry selects.
    r.family = Family::Core;
    accept(r, {"metadata.name", "metadata.namespace", "reason", "type"});
    r.accepted.emplace_back("reportingController", "reportingComponent");
    for (const char* f : kInvolvedObjectFields)
      r.accepted.emplace_back("regarding." + std::string(f), "involvedObject." + std::string(f));
  }
  return r;
}

std::string unsupportedText(const ResourceDef& def, Family family, std::string_view label) {
  const std::string l(label);
  switch (family) {
    case Family::Default:
      return goQuote(l) + " is not a known field selector: only \"metadata.name\", \"metadata.namespace\"";
    case Family::Core: return "field label not supported: " + l;
    case Family::BatchJob: return "field label " + goQuote(l) + " not supported for batchv1.Job";
    case Family::ResourceSlice:
      return "field label not supported for " + def.group + "/" + def.version + ", Kind=ResourceSlice: " + l;
  }
  return "";
}

// ---- reading the stored object ----

const rapidjson::Value* at(const rapidjson::Value& obj, std::initializer_list<const char*> path) {
  const rapidjson::Value* v = &obj;
  for (const char* key : path) {
    if (!v->IsObject()) return nullptr;
    auto it = v->FindMember(key);
    if (it == v->MemberEnd()) return nullptr;
    v = &it->value;
  }
  return v;
}

// A scalar as fmt prints it and the apiserver compares it: strings as they are,
// booleans true/false, integers in decimal; anything else (missing, null) is "".
std::string scalarText(const rapidjson::Value* v) {
  if (!v) return "";
  if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
  if (v->IsBool()) return v->GetBool() ? "true" : "false";
  if (v->IsInt64()) return std::to_string(v->GetInt64());
  if (v->IsUint64()) return std::to_string(v->GetUint64());
  if (v->IsDouble()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v->GetDouble());
    return buf;
  }
  return "";
}

std::string text(const rapidjson::Value& obj, std::initializer_list<const char*> path) {
  return scalarText(at(obj, path));
}

std::string textOr(const rapidjson::Value& obj, std::initializer_list<const char*> path, const char* fallback) {
  const rapidjson::Value* v = at(obj, path);
  return v && !v->IsNull() ? scalarText(v) : fallback;
}

// "a.b.c" -> nested lookup (CRD selectableFields jsonPaths, leading '.' removed).
const rapidjson::Value* atDotted(const rapidjson::Value& obj, std::string_view dotted) {
  const rapidjson::Value* v = &obj;
  size_t pos = 0;
  while (pos <= dotted.size()) {
    const size_t dot = dotted.find('.', pos);
    const std::string key(dotted.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos));
    if (!v->IsObject()) return nullptr;
    auto it = v->FindMember(key.c_str());
    if (it == v->MemberEnd()) return nullptr;
    v = &it->value;
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  return v;
}

void addEventFields(Fields& f, const rapidjson::Value& obj, bool events_k8s_io) {
  const char* involved = events_k8s_io ? "regarding" : "involvedObject";
  for (const char* name : kInvolvedObjectFields) f["involvedObject." + std::string(name)] = text(obj, {involved, name});
  f["reason"] = text(obj, {"reason"});
  f["type"] = text(obj, {"type"});
  const std::string reporting = text(obj, {events_k8s_io ? "reportingController" : "reportingComponent"});
  f["reportingComponent"] = reporting;
  std::string source = text(obj, {events_k8s_io ? "deprecatedSource" : "source", "component"});
  f["source"] = source.empty() ? reporting : source;
}

void addPodFields(Fields& f, const rapidjson::Value& obj) {
  f["spec.nodeName"] = text(obj, {"spec", "nodeName"});
  f["spec.restartPolicy"] = text(obj, {"spec", "restartPolicy"});
  f["spec.schedulerName"] = text(obj, {"spec", "schedulerName"});
  std::string sa = text(obj, {"spec", "serviceAccountName"});
  f["spec.serviceAccountName"] = sa.empty() ? text(obj, {"spec", "serviceAccount"}) : sa;
  f["spec.hostNetwork"] = textOr(obj, {"spec", "hostNetwork"}, "false");
  f["status.phase"] = text(obj, {"status", "phase"});
  std::string ip;
  if (const auto* ips = at(obj, {"status", "podIPs"}); ips && ips->IsArray() && !ips->Empty())
    ip = text((*ips)[0], {"ip"});
  f["status.podIP"] = ip.empty() ? text(obj, {"status", "podIP"}) : ip;
  f["status.nominatedNodeName"] = text(obj, {"status", "nominatedNodeName"});
}

}  // namespace

std::variant<std::string, std::string> convertFieldLabel(const ResourceDef& def, std::string_view label) {
  const Rules r = rulesFor(def);
  if (r.family == Family::Default) {
    if (label == "metadata.name" || label == "metadata.namespace")
      return std::variant<std::string, std::string>(std::in_place_index<0>, std::string(label));
  }
  for (const auto& [accepted, canonical] : r.accepted) {
    if (accepted == label) return std::variant<std::string, std::string>(std::in_place_index<0>, canonical);
  }
  return std::variant<std::string, std::string>(std::in_place_index<1>, unsupportedText(def, r.family, label));
}

Labels extractLabels(const rapidjson::Value& object) {
  Labels labels;
  const rapidjson::Value* l = at(object, {"metadata", "labels"});
  if (!l || !l->IsObject()) return labels;
  for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it) {
    if (!it->value.IsString()) continue;
    labels.emplace(std::string(it->name.GetString(), it->name.GetStringLength()),
                   std::string(it->value.GetString(), it->value.GetStringLength()));
  }
  return labels;
}

Fields extractFields(const ResourceDef& def, const rapidjson::Value& object) {
  Fields f;
  f["metadata.name"] = text(object, {"metadata", "name"});
  if (def.namespaced) f["metadata.namespace"] = text(object, {"metadata", "namespace"});
  if (!def.builtin) {
    for (const auto& path : def.selectable_fields) f[path] = scalarText(atDotted(object, path));
    return f;
  }
  const std::string& g = def.group;
  const std::string& res = def.resource;
  if (g.empty() && res == "pods") {
    addPodFields(f, object);
  } else if (g.empty() && res == "nodes") {
    f["spec.unschedulable"] = textOr(object, {"spec", "unschedulable"}, "false");
  } else if (g.empty() && res == "namespaces") {
    f["status.phase"] = text(object, {"status", "phase"});
    f["name"] = f["metadata.name"];  // upstream keeps this historical alias in the set
  } else if (g.empty() && res == "secrets") {
    f["type"] = text(object, {"type"});
  } else if (g.empty() && res == "services") {
    f["spec.clusterIP"] = text(object, {"spec", "clusterIP"});
    f["spec.type"] = text(object, {"spec", "type"});
  } else if (g.empty() && res == "replicationcontrollers") {
    f["status.replicas"] = textOr(object, {"status", "replicas"}, "0");
  } else if (g.empty() && res == "events") {
    addEventFields(f, object, false);
  } else if (g == "events.k8s.io" && res == "events") {
    addEventFields(f, object, true);
  } else if (g == "batch" && res == "jobs") {
    f["status.successful"] = textOr(object, {"status", "succeeded"}, "0");
  } else if (g == "apps" && res == "replicasets") {
    // Selectable in the registry although apps/v1 rejects the label (S4 note).
    f["status.replicas"] = textOr(object, {"status", "replicas"}, "0");
  } else if (g == "certificates.k8s.io" && res == "certificatesigningrequests") {
    f["spec.signerName"] = text(object, {"spec", "signerName"});
  } else if (g == "resource.k8s.io" && res == "resourceslices") {
    f["spec.nodeName"] = text(object, {"spec", "nodeName"});
    f["spec.driver"] = text(object, {"spec", "driver"});
  }
  return f;
}

}  // namespace testapi
