#include "cache/selectors/selectable_fields.h"

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

// A field whose selector spelling is also its JSON path; `proto` is the same path in
// protobuf field numbers (k8s.io/api <group>/<version>/generated.proto).
SelectableField same(std::string_view name, std::vector<uint32_t> proto = {},
                     ProtoScalar scalar = ProtoScalar::String) {
  return SelectableField{std::string(name), splitPath(name), std::move(proto), scalar};
}
SelectableField at(std::string_view name, std::string_view json_path, std::vector<uint32_t> proto = {},
                   ProtoScalar scalar = ProtoScalar::String) {
  return SelectableField{std::string(name), splitPath(json_path), std::move(proto), scalar};
}
constexpr ProtoScalar kBool = ProtoScalar::Bool;
constexpr ProtoScalar kInt = ProtoScalar::Int;

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
                                {same("spec.nodeName", {2, 10}), same("spec.restartPolicy", {2, 3}),
                                 same("spec.schedulerName", {2, 19}), same("spec.serviceAccountName", {2, 8}),
                                 same("spec.hostNetwork", {2, 11}, kBool), same("status.phase", {3, 1}),
                                 same("status.podIP", {3, 6}), same("status.podIPs"),
                                 same("status.nominatedNodeName", {3, 11})},
                                {{"spec.host", "spec.nodeName"}});
  return spec;
}

std::shared_ptr<const FieldSpec> nodes() {
  static const auto spec = make(false, FieldErrorStyle::LabelNotSupported, {same("spec.unschedulable", {2, 4}, kBool)});
  return spec;
}

std::shared_ptr<const FieldSpec> namespaces() {
  static const auto spec = make(false, FieldErrorStyle::LabelNotSupported, {same("status.phase", {3, 1})});
  return spec;
}

std::shared_ptr<const FieldSpec> secrets() {
  static const auto spec = make(true, FieldErrorStyle::LabelNotSupported, {same("type", {3})});
  return spec;
}

std::shared_ptr<const FieldSpec> services() {
  static const auto spec = make(true, FieldErrorStyle::LabelNotSupported, {same("spec.clusterIP", {2, 3}), same("spec.type", {2, 4})});
  return spec;
}

std::shared_ptr<const FieldSpec> replicationControllers() {
  static const auto spec = make(true, FieldErrorStyle::LabelNotSupported, {same("status.replicas", {3, 1}, kInt)});
  return spec;
}

// core/v1 events: "source" is source.component (falling back to reportingComponent, see
// FieldSelector), "reportingComponent" is the JSON name of ReportingController.
std::shared_ptr<const FieldSpec> coreEvents() {
  static const auto spec = make(
      true, FieldErrorStyle::LabelNotSupported,
      {same("involvedObject.kind", {2, 1}), same("involvedObject.namespace", {2, 2}),
       same("involvedObject.name", {2, 3}), same("involvedObject.uid", {2, 4}),
       same("involvedObject.apiVersion", {2, 5}), same("involvedObject.resourceVersion", {2, 6}),
       same("involvedObject.fieldPath", {2, 7}), same("reason", {3}), same("reportingComponent", {14}),
       at("source", "source.component", {5, 1}), same("type", {9})});
  return spec;
}

// events.k8s.io/v1: the same event, spelled with the new field names.
std::shared_ptr<const FieldSpec> eventsV1Events() {
  static const auto spec = make(
      true, FieldErrorStyle::LabelNotSupported,
      {same("regarding.kind", {8, 1}), same("regarding.namespace", {8, 2}), same("regarding.name", {8, 3}),
       same("regarding.uid", {8, 4}), same("regarding.apiVersion", {8, 5}), same("regarding.resourceVersion", {8, 6}),
       same("regarding.fieldPath", {8, 7}), same("reason", {7}), same("reportingController", {4}),
       same("type", {11})});
  return spec;
}

// batch/v1 jobs: "status.successful" is status.succeeded (KK pkg/registry/batch/job/strategy.go).
std::shared_ptr<const FieldSpec> jobs() {
  static const auto spec =
      make(true, FieldErrorStyle::BatchJob, {at("status.successful", "status.succeeded", {3, 5}, kInt)});
  return spec;
}

std::shared_ptr<const FieldSpec> certificateSigningRequests() {
  static const auto spec = make(false, FieldErrorStyle::LabelNotSupported, {same("spec.signerName", {2, 7})});
  return spec;
}

// certificates.k8s.io ClusterTrustBundle and PodCertificateRequest (KK
// pkg/registry/certificates/*/storage/storage.go getAttrs; same field numbers in v1beta1
// and v1alpha1, KK pkg/apis/certificates/*/conversion.go). kube-controller-manager's
// trust-bundle publisher watches bundles by spec.signerName.
std::shared_ptr<const FieldSpec> clusterTrustBundles() {
  static const auto spec = make(false, FieldErrorStyle::LabelNotSupported, {same("spec.signerName", {2, 1})});
  return spec;
}
std::shared_ptr<const FieldSpec> podCertificateRequests() {
  static const auto spec =
      make(true, FieldErrorStyle::LabelNotSupported,
           {same("spec.signerName", {2, 1}), same("spec.podName", {2, 2}), same("spec.nodeName", {2, 6})});
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
                      make(false, FieldErrorStyle::ResourceSlice, {same("spec.nodeName", {2, 3}), same("spec.driver", {2, 1})}, {},
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
  } else if (group == "certificates.k8s.io" && resource == "clustertrustbundles") {
    return clusterTrustBundles();
  } else if (group == "certificates.k8s.io" && resource == "podcertificaterequests") {
    return podCertificateRequests();
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
