#include <doctest/doctest.h>

#include "tests/apiserver/semantics.h"
#include "test_util.h"

using namespace testapi;
using namespace testapi::test;

namespace {

rapidjson::Document parse(const char* json) {
  rapidjson::Document d;
  d.Parse(json);
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

std::shared_ptr<const FieldSelector> sel(const ResourceDef& def, std::string_view text) {
  return valueOf(parseFieldSelector(def, text));
}

std::string selError(const ResourceDef& def, std::string_view text) {
  auto r = parseFieldSelector(def, text);
  const auto& e = errorOf(r);
  CHECK(e.code == 400);
  CHECK(e.reason == "BadRequest");
  return e.message;
}

const ResourceDef kPods = coreDef("pods", "Pod");
const ResourceDef kNodes = coreDef("nodes", "Node", false);
const ResourceDef kNamespaces = coreDef("namespaces", "Namespace", false);
const ResourceDef kSecrets = coreDef("secrets", "Secret");
const ResourceDef kServices = coreDef("services", "Service");
const ResourceDef kEvents = coreDef("events", "Event");
const ResourceDef kRCs = coreDef("replicationcontrollers", "ReplicationController");
const ResourceDef kConfigMaps = coreDef("configmaps", "ConfigMap");
const ResourceDef kJobs = groupDef("batch", "jobs", "Job");
const ResourceDef kReplicaSets = groupDef("apps", "replicasets", "ReplicaSet");
const ResourceDef kClusterRoles = groupDef("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", false);

ResourceDef widgets(bool namespaced) {
  ResourceDef d = groupDef("example.com", "widgets", "Widget", namespaced);
  d.builtin = false;
  d.selectable_fields = {"spec.color", "spec.size", "spec.enabled"};
  return d;
}

const char* kPod = R"J({"metadata":{"name":"web-0","namespace":"default","labels":{"app":"web","tier":"fe"}},
  "spec":{"nodeName":"node-1","restartPolicy":"Always","schedulerName":"default-scheduler",
          "serviceAccountName":"sa","hostNetwork":true},
  "status":{"phase":"Running","podIP":"10.0.0.1","podIPs":[{"ip":"10.0.0.1"},{"ip":"fd00::1"}],
            "nominatedNodeName":"node-2"}})J";

}  // namespace

TEST_CASE("Pod fields are extracted as the apiserver compares them (S4)") {
  auto pod = parse(kPod);
  Fields f = extractFields(kPods, pod);
  CHECK(f["metadata.name"] == "web-0");
  CHECK(f["metadata.namespace"] == "default");
  CHECK(f["spec.nodeName"] == "node-1");
  CHECK(f["spec.restartPolicy"] == "Always");
  CHECK(f["spec.schedulerName"] == "default-scheduler");
  CHECK(f["spec.serviceAccountName"] == "sa");
  CHECK(f["spec.hostNetwork"] == "true");
  CHECK(f["status.phase"] == "Running");
  CHECK(f["status.podIP"] == "10.0.0.1");
  CHECK(f["status.nominatedNodeName"] == "node-2");
  CHECK(f.count("status.podIPs") == 0);

  auto bare = parse(R"J({"metadata":{"name":"p","namespace":"ns"},"spec":{},"status":{}})J");
  Fields g = extractFields(kPods, bare);
  CHECK(g["spec.hostNetwork"] == "false");
  CHECK(g["spec.nodeName"] == "");
}

TEST_CASE("Pod field selectors match, including the spec.host alias and unscheduled pods (S3, S4)") {
  auto pod = parse(kPod);
  Fields f = extractFields(kPods, pod);
  CHECK(sel(kPods, "spec.nodeName=node-1")->matches(f));
  CHECK(sel(kPods, "spec.host=node-1")->matches(f));
  CHECK(sel(kPods, "spec.host=node-1")->requiredValue("spec.nodeName") == std::optional<std::string>("node-1"));
  CHECK(sel(kPods, "spec.nodeName==node-1,status.phase!=Pending")->matches(f));
  CHECK_FALSE(sel(kPods, "spec.nodeName=")->matches(f));
  CHECK(sel(kPods, "spec.hostNetwork=true")->matches(f));
  CHECK(sel(kPods, "metadata.name=web-0,metadata.namespace=default")->matches(f));
  CHECK_FALSE(sel(kPods, "metadata.name!=web-0")->matches(f));
  // status.podIPs is accepted but not selectable: it compares as the empty string.
  CHECK(sel(kPods, "status.podIPs=")->matches(f));
  CHECK_FALSE(sel(kPods, "status.podIPs=10.0.0.1")->matches(f));
  auto unscheduled = parse(R"J({"metadata":{"name":"p","namespace":"ns"},"spec":{}})J");
  CHECK(sel(kPods, "spec.nodeName=")->matches(extractFields(kPods, unscheduled)));
}

TEST_CASE("requiredValue reports only = and == terms") {
  auto s = sel(kPods, "metadata.name=a,spec.nodeName!=b");
  CHECK(s->requiredValue("metadata.name") == std::optional<std::string>("a"));
  CHECK_FALSE(s->requiredValue("spec.nodeName"));
  CHECK_FALSE(s->requiredValue("metadata.namespace"));
  CHECK(sel(kPods, "")->empty());
  CHECK(sel(kPods, ",")->empty());
}

TEST_CASE("Field selector values honour the backslash escapes (S3)") {
  Fields f{{"metadata.name", "a,b=c\\d"}};
  CHECK(sel(kConfigMaps, "metadata.name=a\\,b\\=c\\\\d")->matches(f));
  CHECK(selError(kConfigMaps, "metadata.name=a\\x") == "invalid field selector: invalid escape sequence: \\x");
  CHECK(selError(kConfigMaps, "metadata.name=a\\") == "invalid field selector: invalid escape sequence: \\");
  CHECK(selError(kConfigMaps, "metadata.name=a=b") == "invalid field selector: unescaped character in value: 61");
}

TEST_CASE("A term without an operator is rejected with the whole selector quoted (S3)") {
  auto r = parseFieldSelector(kPods, "metadata.name=x,foo");
  CHECK(errorOf(r).toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"invalid selector: 'metadata.name=x,foo'; can't understand 'foo'","reason":"BadRequest","code":400})J");
}

TEST_CASE("Each built-in type accepts its own fields (S4)") {
  CHECK(valueOf(parseFieldSelector(kNodes, "spec.unschedulable=false,metadata.name=n")));
  CHECK(valueOf(parseFieldSelector(kNamespaces, "status.phase=Active")));
  CHECK(valueOf(parseFieldSelector(kSecrets, "type=Opaque,metadata.namespace=x")));
  CHECK(valueOf(parseFieldSelector(kServices, "spec.clusterIP=None,spec.type=ClusterIP")));
  CHECK(valueOf(parseFieldSelector(kRCs, "status.replicas=0")));
  CHECK(valueOf(parseFieldSelector(kJobs, "status.successful=1")));
  CHECK(valueOf(parseFieldSelector(
      kEvents, "involvedObject.kind=Pod,involvedObject.namespace=a,involvedObject.name=b,involvedObject.uid=c,"
               "involvedObject.apiVersion=v1,involvedObject.resourceVersion=1,involvedObject.fieldPath=d,reason=e,"
               "reportingComponent=f,source=g,type=Normal")));
}

TEST_CASE("Unsupported fields get the type family's error text (S5)") {
  CHECK(selError(kReplicaSets, "status.replicas=0") ==
        R"J("status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace")J");
  CHECK(selError(kConfigMaps, "data.x=1") ==
        R"J("data.x" is not a known field selector: only "metadata.name", "metadata.namespace")J");
  CHECK(selError(kPods, "spec.containers=x") == "field label not supported: spec.containers");
  CHECK(selError(kNodes, "metadata.namespace=x") == "field label not supported: metadata.namespace");
  CHECK(selError(kNamespaces, "metadata.namespace=x") == "field label not supported: metadata.namespace");
  CHECK(selError(kNamespaces, "name=x") == "field label not supported: name");
  CHECK(selError(kSecrets, "data=x") == "field label not supported: data");
  CHECK(selError(kServices, "spec.ports=x") == "field label not supported: spec.ports");
  CHECK(selError(kEvents, "message=x") == "field label not supported: message");
  CHECK(selError(kRCs, "spec.replicas=1") == "field label not supported: spec.replicas");
  CHECK(selError(kJobs, "status.succeeded=1") == R"J(field label "status.succeeded" not supported for batchv1.Job)J");
  CHECK(selError(kPods, " metadata.name=x") == "field label not supported:  metadata.name");
}

TEST_CASE("The first unsupported term in sorted order is the one reported (S5)") {
  CHECK(selError(kPods, "zzz=1,aaa=2") == "field label not supported: aaa");
}

TEST_CASE("Types without a conversion accept metadata.namespace even when cluster-scoped (S4)") {
  auto s = sel(kClusterRoles, "metadata.namespace=x");
  auto role = parse(R"J({"metadata":{"name":"admin"}})J");
  CHECK_FALSE(s->matches(extractFields(kClusterRoles, role)));
  CHECK(sel(kClusterRoles, "metadata.namespace=")->matches(extractFields(kClusterRoles, role)));
}

TEST_CASE("Node, namespace, secret, service, RC and job fields render booleans and integers (S4)") {
  auto node = parse(R"J({"metadata":{"name":"n1"},"spec":{"unschedulable":true}})J");
  CHECK(extractFields(kNodes, node)["spec.unschedulable"] == "true");
  CHECK(extractFields(kNodes, node).count("metadata.namespace") == 0);
  auto plainNode = parse(R"J({"metadata":{"name":"n2"},"spec":{}})J");
  CHECK(sel(kNodes, "spec.unschedulable=false")->matches(extractFields(kNodes, plainNode)));
  auto ns = parse(R"J({"metadata":{"name":"kube-system"},"status":{"phase":"Active"}})J");
  CHECK(extractFields(kNamespaces, ns)["status.phase"] == "Active");
  auto secret = parse(R"J({"metadata":{"name":"s","namespace":"d"},"type":"kubernetes.io/tls"})J");
  CHECK(sel(kSecrets, "type=kubernetes.io/tls")->matches(extractFields(kSecrets, secret)));
  auto svc = parse(R"J({"metadata":{"name":"s","namespace":"d"},"spec":{"clusterIP":"10.96.0.1","type":"ClusterIP"}})J");
  CHECK(extractFields(kServices, svc)["spec.clusterIP"] == "10.96.0.1");
  CHECK(extractFields(kServices, svc)["spec.type"] == "ClusterIP");
  auto rc = parse(R"J({"metadata":{"name":"r","namespace":"d"},"status":{"replicas":3}})J");
  CHECK(extractFields(kRCs, rc)["status.replicas"] == "3");
  auto job = parse(R"J({"metadata":{"name":"j","namespace":"d"},"status":{}})J");
  CHECK(sel(kJobs, "status.successful=0")->matches(extractFields(kJobs, job)));
  auto done = parse(R"J({"metadata":{"name":"j","namespace":"d"},"status":{"succeeded":5}})J");
  CHECK(extractFields(kJobs, done)["status.successful"] == "5");
}

TEST_CASE("Event fields include source, falling back to the reporting controller (S4)") {
  auto ev = parse(R"J({"metadata":{"name":"e","namespace":"d"},"involvedObject":{"kind":"Pod","name":"p","uid":"u",
    "namespace":"d","apiVersion":"v1","resourceVersion":"7","fieldPath":"spec.containers{c}"},"reason":"Pulled",
    "source":{"component":"kubelet","host":"n1"},"reportingComponent":"kubelet-rc","type":"Normal"})J");
  Fields f = extractFields(kEvents, ev);
  CHECK(f["involvedObject.kind"] == "Pod");
  CHECK(f["involvedObject.fieldPath"] == "spec.containers{c}");
  CHECK(f["involvedObject.resourceVersion"] == "7");
  CHECK(f["source"] == "kubelet");
  CHECK(f["reportingComponent"] == "kubelet-rc");
  CHECK(sel(kEvents, "involvedObject.name=p,type=Normal,reason=Pulled")->matches(f));
  auto ev2 = parse(R"J({"metadata":{"name":"e","namespace":"d"},"reportingComponent":"ctrl"})J");
  CHECK(extractFields(kEvents, ev2)["source"] == "ctrl");
}

TEST_CASE("Custom resources select on metadata and their selectableFields (S6)") {
  const ResourceDef def = widgets(true);
  auto w = parse(R"J({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"d"},
    "spec":{"color":"blue","size":42,"enabled":false}})J");
  Fields f = extractFields(def, w);
  CHECK(f["spec.color"] == "blue");
  CHECK(f["spec.size"] == "42");
  CHECK(f["spec.enabled"] == "false");
  CHECK(sel(def, "spec.size=42,spec.enabled=false,metadata.namespace=d")->matches(f));
  auto missing = parse(R"J({"metadata":{"name":"w","namespace":"d"}})J");
  CHECK(extractFields(def, missing)["spec.color"] == "");
  CHECK(selError(def, "spec.shape=round") == "field label not supported: spec.shape");
  CHECK(selError(widgets(false), "metadata.namespace=d") == "field label not supported: metadata.namespace");
}

TEST_CASE("Labels are extracted from metadata.labels") {
  auto pod = parse(kPod);
  Labels l = extractLabels(pod);
  CHECK(l == Labels{{"app", "web"}, {"tier", "fe"}});
  auto none = parse(R"J({"metadata":{"name":"x"}})J");
  CHECK(extractLabels(none).empty());
}
