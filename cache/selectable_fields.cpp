#include "cache/selectable_fields.h"

#include <map>
#include <mutex>
#include <utility>

namespace cache {

namespace {

// Splits "spec.nodeName" into {"spec", "nodeName"}.
std::vector<std::string> splitPath(std::string_view dotted) {
  std::vector<std::string> path;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    path.emplace_back(dotted.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return path;
    start = dot + 1;
  }
}

// A field whose selector spelling is also its JSON path.
SelectableField same(std::string_view name) { return SelectableField{std::string(name), splitPath(name)}; }
SelectableField at(std::string_view name, std::string_view json_path) {
  return SelectableField{std::string(name), splitPath(json_path)};
}

std::shared_ptr<const FieldSpec> make(bool namespaced, FieldErrorStyle style, std::vector<SelectableField> fields,
                                      std::vector<std::pair<std::string, std::string>> aliases = {},
                                      std::string version = {}) {
  auto spec = std::make_shared<FieldSpec>();
  spec->namespaced = namespaced;
  spec->error_style = style;
  spec->version = std::move(version);
  spec->fields = std::move(fields);
  spec->aliases = std::move(aliases);
  return spec;
}

// Field label conversions of core/v1 (KK pkg/apis/core/v1/conversion.go) with the JSON
// paths the registries read them from (pkg/registry/core/*/strategy.go).
std::shared_ptr<const FieldSpec> pods() {
  static const auto spec = make(true, FieldErrorStyle::LabelNotSupported,
                                {same("spec.nodeName"), same("spec.restartPolicy"), same("spec.schedulerName"),
                                 same("spec.serviceAccountName"), same("spec.hostNetwork"), same("status.phase"),
                                 same("status.podIP"), same("status.podIPs"), same("status.nominatedNodeName")},
                                {{"spec.host", "spec.nodeName"}});
  return spec;
}

std::shared_ptr<const FieldSpec> nodes() {
  static const auto spec = make(false, FieldErrorStyle::LabelNotSupported, {same("spec.unschedulable")});
  return spec;
}

std::shared_ptr<const FieldSpec> namespaces() {
  static const auto spec = make(false, FieldErrorStyle::LabelNotSupported, {same("status.phase")});
  return spec;
}

std::shared_ptr<const FieldSpec> secrets() {
  static const auto spec = make(true, FieldErrorStyle::LabelNotSupported, {same("type")});
  return spec;
}

std::shared_ptr<const FieldSpec> services() {
  static const auto spec = make(true, FieldErrorStyle::LabelNotSupported, {same("spec.clusterIP"), same("spec.type")});
  return spec;
}

std::shared_ptr<const FieldSpec> replicationControllers() {
  static const auto spec = make(true, FieldErrorStyle::LabelNotSupported, {same("status.replicas")});
  return spec;
}

// core/v1 events: "source" is source.component (falling back to reportingComponent, see
// FieldSelector), "reportingComponent" is the JSON name of ReportingController.
std::shared_ptr<const FieldSpec> coreEvents() {
  static const auto spec = make(
      true, FieldErrorStyle::LabelNotSupported,
      {same("involvedObject.kind"), same("involvedObject.namespace"), same("involvedObject.name"),
       same("involvedObject.uid"), same("involvedObject.apiVersion"), same("involvedObject.resourceVersion"),
       same("involvedObject.fieldPath"), same("reason"), same("reportingComponent"), at("source", "source.component"),
       same("type")});
  return spec;
}

// events.k8s.io/v1: the same event, spelled with the new field names.
std::shared_ptr<const FieldSpec> eventsV1Events() {
  static const auto spec = make(
      true, FieldErrorStyle::LabelNotSupported,
      {same("regarding.kind"), same("regarding.namespace"), same("regarding.name"), same("regarding.uid"),
       same("regarding.apiVersion"), same("regarding.resourceVersion"), same("regarding.fieldPath"), same("reason"),
       same("reportingController"), same("type")});
  return spec;
}

// batch/v1 jobs: "status.successful" is status.succeeded (KK pkg/registry/batch/job/strategy.go).
std::shared_ptr<const FieldSpec> jobs() {
  static const auto spec =
      make(true, FieldErrorStyle::BatchJob, {at("status.successful", "status.succeeded")});
  return spec;
}

std::shared_ptr<const FieldSpec> certificateSigningRequests() {
  static const auto spec = make(false, FieldErrorStyle::LabelNotSupported, {same("spec.signerName")});
  return spec;
}

// resource.k8s.io: the rejection names the served version, so one spec per version.
std::shared_ptr<const FieldSpec> resourceSlices(std::string_view version) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const FieldSpec>, std::less<>> by_version;
  std::lock_guard lock(mu);
  auto it = by_version.find(version);
  if (it == by_version.end()) {
    it = by_version
             .emplace(std::string(version),
                      make(false, FieldErrorStyle::ResourceSlice, {same("spec.nodeName"), same("spec.driver")}, {},
                           "resource.k8s.io/" + std::string(version)))
             .first;
  }
  return it->second;
}

std::shared_ptr<const FieldSpec> metadataOnly(bool namespaced) {
  static const auto namespaced_spec = make(true, FieldErrorStyle::NotKnownField, {});
  static const auto cluster_spec = make(false, FieldErrorStyle::NotKnownField, {});
  return namespaced ? namespaced_spec : cluster_spec;
}

}  // namespace

// Built-in specs are process-wide singletons: the same (group, resource) always yields
// the same pointer, which lets FieldSelector recognise the few fields upstream renders
// from Go zero values ("false", "0") instead of from the JSON.
std::shared_ptr<const FieldSpec> FieldSpec::forBuiltin(std::string_view group, std::string_view version,
                                                       std::string_view resource, bool namespaced) {
  if (group.empty()) {
    if (resource == "pods") return pods();
    if (resource == "nodes") return nodes();
    if (resource == "namespaces") return namespaces();
    if (resource == "secrets") return secrets();
    if (resource == "services") return services();
    if (resource == "replicationcontrollers") return replicationControllers();
    if (resource == "events") return coreEvents();
  } else if (group == "events.k8s.io" && resource == "events") {
    return eventsV1Events();
  } else if (group == "batch" && resource == "jobs") {
    return jobs();
  } else if (group == "certificates.k8s.io" && resource == "certificatesigningrequests") {
    return certificateSigningRequests();
  } else if (group == "resource.k8s.io" && resource == "resourceslices") {
    return resourceSlices(version);
  }
  return metadataOnly(namespaced);
}

std::shared_ptr<const FieldSpec> FieldSpec::forCustomResource(bool namespaced,
                                                              const std::vector<std::string>& json_paths) {
  std::vector<SelectableField> fields;
  fields.reserve(json_paths.size());
  for (const auto& json_path : json_paths) {
    std::string_view name = json_path;
    if (!name.empty() && name.front() == '.') name.remove_prefix(1);
    fields.push_back(same(name));
  }
  return make(namespaced, FieldErrorStyle::LabelNotSupported, std::move(fields));
}

}  // namespace cache
