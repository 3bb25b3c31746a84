#include <doctest/doctest.h>

#include <rapidjson/document.h>

#include "tests/apiserver/media/rendering.h"
#include "tests/apiserver/table/table_printers.h"
#include "test_util.h"

using namespace testapi;
using namespace testapi::test;
using namespace std::chrono_literals;

namespace {

// 2024-06-25T15:00:00Z
const PrinterClock::time_point kNow = PrinterClock::time_point(std::chrono::seconds(1719327600));

rapidjson::Document parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str());
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

std::string table(const ResourceDef& def, const std::vector<std::string_view>& objs, TableOptions opts = {},
                  ListMetaOut meta = {"100", "", std::nullopt}) {
  return valueOf(renderTable(def, objs, opts, meta, kNow));
}

// The cells of row `i`, as compact JSON.
std::string cells(const std::string& table_json, size_t i = 0) {
  auto d = parse(table_json);
  const auto& row = d["rows"][static_cast<rapidjson::SizeType>(i)]["cells"];
  std::string out = "[";
  for (rapidjson::SizeType c = 0; c < row.Size(); ++c) {
    if (c) out += ",";
    if (row[c].IsString()) out += std::string("\"") + row[c].GetString() + "\"";
    else if (row[c].IsInt64()) out += std::to_string(row[c].GetInt64());
    else if (row[c].IsBool()) out += row[c].GetBool() ? "true" : "false";
    else if (row[c].IsNull()) out += "null";
    else out += "?";
  }
  return out + "]";
}

std::vector<std::string> columnNames(const std::string& table_json) {
  auto d = parse(table_json);
  std::vector<std::string> names;
  for (const auto& c : d["columnDefinitions"].GetArray()) names.emplace_back(c["name"].GetString());
  return names;
}

const ResourceDef kPods = coreDef("pods", "Pod");

}  // namespace

TEST_CASE("Ages print like the apiserver's duration printer (N3)") {
  CHECK(humanDuration(-3s) == "<invalid>");
  CHECK(humanDuration(-1s) == "0s");
  CHECK(humanDuration(0s) == "0s");
  CHECK(humanDuration(5s) == "5s");
  CHECK(humanDuration(119s) == "119s");
  CHECK(humanDuration(120s) == "2m");
  CHECK(humanDuration(192s) == "3m12s");
  CHECK(humanDuration(10min + 30s) == "10m");
  CHECK(humanDuration(179min) == "179m");
  CHECK(humanDuration(3h) == "3h");
  CHECK(humanDuration(3h + 5min) == "3h5m");
  CHECK(humanDuration(8h + 59min) == "8h");
  CHECK(humanDuration(47h) == "47h");
  CHECK(humanDuration(52h) == "2d4h");
  CHECK(humanDuration(72h) == "3d");
  CHECK(humanDuration(24h * 8) == "8d");
  CHECK(humanDuration(24h * 400) == "400d");
  CHECK(humanDuration(24h * 365 * 2) == "2y");
  CHECK(humanDuration(24h * (365 * 3 + 10)) == "3y10d");
  CHECK(humanDuration(24h * 365 * 9) == "9y");
}

TEST_CASE("RFC 3339 timestamps parse with fractions and offsets") {
  CHECK(parseRfc3339("2024-06-25T15:00:00Z") == kNow);
  CHECK(parseRfc3339("2024-06-25T17:00:00+02:00") == kNow);
  CHECK(parseRfc3339("2024-06-25T14:59:59.500000Z") == kNow - 500ms);
  CHECK_FALSE(parseRfc3339("yesterday"));
  CHECK_FALSE(parseRfc3339("0001-01-01T00:00:00Z"));
}

TEST_CASE("A ConfigMap table is byte-identical to the apiserver's (N3)") {
  const std::string cm =
      R"J({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cfg","namespace":"default","uid":"u1","resourceVersion":"7","creationTimestamp":"2024-06-25T14:56:48Z","labels":{"a":"<b>"}},"data":{"k":"v","x":"y"},"binaryData":{"b":"AA=="}})J";
  CHECK(table(coreDef("configmaps", "ConfigMap"), {cm}) ==
        R"J({"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"100"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names","priority":0},{"name":"Data","type":"string","format":"","description":"Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.","priority":0},{"name":"Age","type":"string","format":"","description":"CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata","priority":0}],"rows":[{"cells":["cfg",3,"3m12s"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"cfg","namespace":"default","uid":"u1","resourceVersion":"7","creationTimestamp":"2024-06-25T14:56:48Z","labels":{"a":"\u003cb\u003e"}}}}]})J");
}

TEST_CASE("Table list metadata carries continue and remainingItemCount; an empty list has no rows (N3, P1)") {
  auto t = table(coreDef("configmaps", "ConfigMap"), {}, {}, {"5", "tok", 3});
  CHECK(t.find(R"J("metadata":{"resourceVersion":"5","continue":"tok","remainingItemCount":3})J") != std::string::npos);
  CHECK(t.find(R"J("rows":[]})J") != std::string::npos);
}

TEST_CASE("includeObject selects the row object and rejects unknown values (N3)") {
  const std::string cm = R"J({"metadata":{"name":"cfg","namespace":"d"},"data":{}})J";
  const ResourceDef def = coreDef("configmaps", "ConfigMap");
  CHECK(table(def, {cm}, {"None", true}).find(R"J("object":null)J") != std::string::npos);
  CHECK(table(def, {cm}, {"Object", true})
            .find(R"J("object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cfg","namespace":"d"},"data":{}})J") !=
        std::string::npos);
  CHECK(table(def, {cm}, {"", true}).find(R"J("object":{"kind":"PartialObjectMetadata")J") != std::string::npos);
  auto r = renderTable(def, {cm}, {"Full", true}, {}, kNow);
  CHECK(errorOf(r).toJson() ==
        R"J({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unable to convert to Table as requested: includeObject: Invalid value: \"Full\": must be 'Metadata', 'Object', 'None', or empty","reason":"BadRequest","code":400})J");
}

TEST_CASE("Watch events after the first carry no column definitions (N3)") {
  auto t = table(coreDef("configmaps", "ConfigMap"), {R"J({"metadata":{"name":"a"}})J"}, {"Metadata", false});
  CHECK(t.find(R"J("columnDefinitions":null,"rows":[)J") != std::string::npos);
}

TEST_CASE("Pod rows follow the apiserver's pod printer (N3)") {
  CHECK(columnNames(table(kPods, {})) ==
        std::vector<std::string>{"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node",
                                 "Readiness Gates"});
  const std::string running = R"J({"metadata":{"name":"web-0","creationTimestamp":"2024-06-25T14:26:00Z"},
    "spec":{"nodeName":"n1","containers":[{"name":"a"},{"name":"b"}],"readinessGates":[{"conditionType":"x/ok"}]},
    "status":{"phase":"Running","podIP":"10.0.0.1","podIPs":[{"ip":"10.0.0.1"}],
      "conditions":[{"type":"Ready","status":"True"},{"type":"x/ok","status":"True"}],
      "containerStatuses":[{"name":"a","ready":true,"restartCount":2,"state":{"running":{}},
        "lastState":{"terminated":{"exitCode":1,"finishedAt":"2024-06-25T14:55:00Z"}}},
        {"name":"b","ready":false,"restartCount":0,"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}})J";
  CHECK(cells(table(kPods, {running})) ==
        R"J(["web-0","1/2","CrashLoopBackOff","2 (5m ago)","34m","10.0.0.1","n1","<none>","1/1"])J");

  const std::string pending = R"J({"metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Pending"}})J";
  CHECK(cells(table(kPods, {pending})) == R"J(["p","0/1","Pending","0","<unknown>","<none>","<none>","<none>","<none>"])J");

  const std::string done = R"J({"metadata":{"name":"j"},"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Succeeded",
    "containerStatuses":[{"name":"a","state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}})J";
  auto t = table(kPods, {done});
  CHECK(cells(t) == R"J(["j","0/1","Completed","0","<unknown>","<none>","<none>","<none>","<none>"])J");
  CHECK(t.find(R"J("conditions":[{"type":"Completed","status":"True","reason":"Succeeded","message":"The pod has completed successfully."}])J") !=
        std::string::npos);

  const std::string init = R"J({"metadata":{"name":"i"},"spec":{"initContainers":[{"name":"i1"},{"name":"i2"}],"containers":[{"name":"a"}]},
    "status":{"phase":"Pending","initContainerStatuses":[{"name":"i1","state":{"terminated":{"exitCode":0}}},
      {"name":"i2","state":{"running":{}}}]}})J";
  CHECK(cells(table(kPods, {init})) == R"J(["i","0/1","Init:1/2","0","<unknown>","<none>","<none>","<none>","<none>"])J");

  const std::string failedInit = R"J({"metadata":{"name":"f"},"spec":{"initContainers":[{"name":"i1"}],"containers":[{"name":"a"}]},
    "status":{"phase":"Pending","initContainerStatuses":[{"name":"i1","restartCount":3,"state":{"terminated":{"exitCode":2}}}]}})J";
  CHECK(cells(table(kPods, {failedInit})) == R"J(["f","0/1","Init:ExitCode:2","3","<unknown>","<none>","<none>","<none>","<none>"])J");

  const std::string terminating = R"J({"metadata":{"name":"t","deletionTimestamp":"2024-06-25T14:59:00Z"},
    "spec":{"containers":[{"name":"a"}]},"status":{"phase":"Running","containerStatuses":[{"name":"a","ready":true,"state":{"running":{}}}]}})J";
  CHECK(cells(table(kPods, {terminating})) == R"J(["t","1/1","Terminating","0","<unknown>","<none>","<none>","<none>","<none>"])J");

  const std::string sidecar = R"J({"metadata":{"name":"s"},"spec":{"initContainers":[{"name":"log","restartPolicy":"Always"}],
    "containers":[{"name":"a"}]},"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True"}],
    "initContainerStatuses":[{"name":"log","started":true,"ready":true,"restartCount":1,"state":{"running":{}}}],
    "containerStatuses":[{"name":"a","ready":true,"state":{"running":{}}}]}})J";
  CHECK(cells(table(kPods, {sidecar})) == R"J(["s","2/2","Running","1","<unknown>","<none>","<none>","<none>","<none>"])J");
}

TEST_CASE("Service rows show type, cluster IP, external IP, ports and selector (N3)") {
  const ResourceDef def = coreDef("services", "Service");
  CHECK(columnNames(table(def, {})) ==
        std::vector<std::string>{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"});
  const std::string svc = R"J({"metadata":{"name":"web","creationTimestamp":"2024-06-23T11:00:00Z"},"spec":{"type":"NodePort",
    "clusterIP":"10.96.0.10","clusterIPs":["10.96.0.10"],"ports":[{"port":80,"nodePort":30080,"protocol":"TCP"},{"port":53,"protocol":"UDP"}],
    "selector":{"tier":"fe","app":"web"}}})J";
  CHECK(cells(table(def, {svc})) == R"J(["web","NodePort","10.96.0.10","<none>","80:30080/TCP,53/UDP","2d4h","app=web,tier=fe"])J");
  const std::string lb = R"J({"metadata":{"name":"lb"},"spec":{"type":"LoadBalancer","clusterIP":"None"},
    "status":{"loadBalancer":{"ingress":[{"ip":"2.2.2.2"},{"hostname":"a.example"},{"ip":"1.1.1.1"}]}}})J";
  CHECK(cells(table(def, {lb})) == R"J(["lb","LoadBalancer","None","1.1.1.1,2.2.2.2,a.example","<none>","<unknown>","<none>"])J");
  const std::string pending = R"J({"metadata":{"name":"lb"},"spec":{"type":"LoadBalancer"}})J";
  CHECK(cells(table(def, {pending})) == R"J(["lb","LoadBalancer","<none>","<pending>","<none>","<unknown>","<none>"])J");
  const std::string ext = R"J({"metadata":{"name":"x"},"spec":{"type":"ExternalName","externalName":"db.example"}})J";
  CHECK(cells(table(def, {ext})) == R"J(["x","ExternalName","<none>","db.example","<none>","<unknown>","<none>"])J");
}

TEST_CASE("Node rows show status, roles, version and the wide columns (N3)") {
  const ResourceDef def = coreDef("nodes", "Node", false);
  CHECK(columnNames(table(def, {})) ==
        std::vector<std::string>{"Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image",
                                 "Kernel-Version", "Container-Runtime"});
  const std::string node = R"J({"metadata":{"name":"n1","creationTimestamp":"2024-06-15T15:00:00Z",
    "labels":{"node-role.kubernetes.io/control-plane":"","node-role.kubernetes.io/etcd":"","kubernetes.io/role":"infra"}},
    "spec":{"unschedulable":true},"status":{"conditions":[{"type":"MemoryPressure","status":"False"},{"type":"Ready","status":"True"}],
    "addresses":[{"type":"InternalIP","address":"192.168.1.10"}],
    "nodeInfo":{"kubeletVersion":"v1.34.1","osImage":"Debian","kernelVersion":"6.1","containerRuntimeVersion":"containerd://1.7"}}})J";
  CHECK(cells(table(def, {node})) ==
        R"J(["n1","Ready,SchedulingDisabled","control-plane,etcd,infra","10d","v1.34.1","192.168.1.10","<none>","Debian","6.1","containerd://1.7"])J");
  const std::string bare = R"J({"metadata":{"name":"n2"}})J";
  CHECK(cells(table(def, {bare})) == R"J(["n2","Unknown","<none>","<unknown>","","<none>","<none>","<unknown>","<unknown>","<unknown>"])J");
}

TEST_CASE("Event rows show last seen, object, source and count (N3)") {
  const ResourceDef def = coreDef("events", "Event");
  CHECK(columnNames(table(def, {})) ==
        std::vector<std::string>{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen",
                                 "Count", "Name"});
  const std::string ev = R"J({"metadata":{"name":"web-0.17"},"involvedObject":{"kind":"Pod","name":"web-0","fieldPath":"spec.containers{a}"},
    "reason":"Pulled","message":"  Pulled image  \n","source":{"component":"kubelet","host":"n1"},
    "firstTimestamp":"2024-06-25T14:00:00Z","lastTimestamp":"2024-06-25T14:59:30Z","count":4,"type":"Normal"})J";
  CHECK(cells(table(def, {ev})) ==
        R"J(["30s","Normal","Pulled","pod/web-0","spec.containers{a}","kubelet, n1","Pulled image","60m",4,"web-0.17"])J");
  const std::string modern = R"J({"metadata":{"name":"e2"},"involvedObject":{"kind":"Node"},"reportingComponent":"ctrl",
    "eventTime":"2024-06-25T14:59:55.000000Z","firstTimestamp":null,"lastTimestamp":null,"type":"Warning","reason":"R"})J";
  CHECK(cells(table(def, {modern})) == R"J(["5s","Warning","R","node","","ctrl","","5s",1,"e2"])J");
  const std::string series = R"J({"metadata":{"name":"e3"},"involvedObject":{"kind":"Pod","name":"p"},
    "eventTime":"2024-06-25T14:00:00.000000Z","series":{"count":7,"lastObservedTime":"2024-06-25T14:58:00.000000Z"}})J";
  CHECK(cells(table(def, {series})) == R"J(["2m","","","pod/p","","","","60m",7,"e3"])J");
}

TEST_CASE("Namespace, secret and endpoints rows (N3)") {
  const std::string ns = R"J({"metadata":{"name":"kube-system","creationTimestamp":"2024-06-25T14:59:55Z"},"status":{"phase":"Active"}})J";
  CHECK(cells(table(coreDef("namespaces", "Namespace", false), {ns})) == R"J(["kube-system","Active","5s"])J");
  const std::string secret = R"J({"metadata":{"name":"s"},"type":"Opaque","data":{"a":"YQ==","b":"Yg=="}})J";
  CHECK(cells(table(coreDef("secrets", "Secret"), {secret})) == R"J(["s","Opaque",2,"<unknown>"])J");
  const ResourceDef eps = coreDef("endpoints", "Endpoints");
  const std::string ep = R"J({"metadata":{"name":"web"},"subsets":[{"addresses":[{"ip":"10.0.0.1"},{"ip":"fd00::2"}],
    "ports":[{"port":80},{"port":443}]}]})J";
  CHECK(cells(table(eps, {ep})) == R"J(["web","10.0.0.1:80,[fd00::2]:80,10.0.0.1:443 + 1 more...","<unknown>"])J");
  CHECK(cells(table(eps, {R"J({"metadata":{"name":"none"}})J"})) == R"J(["none","<none>","<unknown>"])J");
  const std::string headless = R"J({"metadata":{"name":"h"},"subsets":[{"addresses":[{"ip":"10.0.0.9"}]}]})J";
  CHECK(cells(table(eps, {headless})) == R"J(["h","10.0.0.9","<unknown>"])J");
}

TEST_CASE("Deployment and ReplicaSet rows show replicas, containers, images and selectors (N3)") {
  const ResourceDef deploy = groupDef("apps", "deployments", "Deployment");
  CHECK(columnNames(table(deploy, {})) == std::vector<std::string>{"Name", "Ready", "Up-to-date", "Available", "Age",
                                                                   "Containers", "Images", "Selector"});
  const std::string d = R"J({"metadata":{"name":"web","creationTimestamp":"2024-06-25T12:00:00Z"},"spec":{"replicas":3,
    "selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"env","operator":"In","values":["prod","dev"]},{"key":"canary","operator":"DoesNotExist"}]},
    "template":{"spec":{"containers":[{"name":"app","image":"app:1"},{"name":"proxy","image":"envoy:1"}]}}},
    "status":{"readyReplicas":2,"updatedReplicas":3,"availableReplicas":2}})J";
  CHECK(cells(table(deploy, {d})) ==
        R"J(["web","2/3",3,2,"3h","app,proxy","app:1,envoy:1","app=web,!canary,env in (dev,prod)"])J");
  const ResourceDef rs = groupDef("apps", "replicasets", "ReplicaSet");
  CHECK(columnNames(table(rs, {})) ==
        std::vector<std::string>{"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"});
  const std::string r = R"J({"metadata":{"name":"web-1"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
    "template":{"spec":{"containers":[{"name":"app","image":"app:1"}]}}},"status":{"replicas":2,"readyReplicas":1}})J";
  CHECK(cells(table(rs, {r})) == R"J(["web-1",2,2,1,"<unknown>","app","app:1","app=web"])J");
  CHECK(cells(table(rs, {R"J({"metadata":{"name":"e"},"spec":{}})J"})) == R"J(["e",1,0,0,"<unknown>","","","<none>"])J");
}

TEST_CASE("Custom resources use additionalPrinterColumns with typed cells (N3)") {
  ResourceDef def = groupDef("example.com", "widgets", "Widget");
  def.builtin = false;
  def.printer_columns = {{"Size", "integer", ".spec.size", "", 0},
                         {"Color", "string", ".spec.color", "The color", 0},
                         {"Ready", "boolean", ".status.ready", "", 1},
                         {"First", "string", ".status.conditions[0].type", "", 0},
                         {"Labels", "string", ".metadata.labels", "", 1},
                         {"Age", "date", ".metadata.creationTimestamp", "", 0}};
  const std::string w = R"J({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","labels":{"a":"b"},
    "creationTimestamp":"2024-06-25T14:59:00Z"},"spec":{"size":3},"status":{"ready":true,"conditions":[{"type":"Synced"}]}})J";
  auto t = table(def, {w});
  CHECK(cells(t) == R"J(["w1",3,null,true,"Synced","{"a":"b"}","60s"])J");
  CHECK(t.find(R"J({"name":"Size","type":"integer","format":"","description":"Custom resource definition column (in JSONPath format): .spec.size","priority":0})J") !=
        std::string::npos);
  CHECK(t.find(R"J({"name":"Color","type":"string","format":"","description":"The color","priority":0})J") != std::string::npos);
  CHECK(t.find(R"J({"name":"Ready","type":"boolean","format":"","description":"Custom resource definition column (in JSONPath format): .status.ready","priority":1})J") !=
        std::string::npos);
}

TEST_CASE("A custom resource without printer columns gets Name and Age (N3)") {
  ResourceDef def = groupDef("example.com", "widgets", "Widget");
  def.builtin = false;
  auto t = table(def, {R"J({"metadata":{"name":"w1","creationTimestamp":"2024-06-25T14:00:00Z"}})J"});
  CHECK(columnNames(t) == std::vector<std::string>{"Name", "Age"});
  CHECK(cells(t) == R"J(["w1","60m"])J");
  CHECK(t.find(R"J({"name":"Age","type":"date","format":"","description":"CreationTimestamp is a timestamp)J") != std::string::npos);
}

TEST_CASE("Built-in types without a printer get Name and Created At (N3)") {
  auto t = table(groupDef("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", false),
                 {R"J({"metadata":{"name":"admin","creationTimestamp":"2024-06-25T14:00:00Z"}})J"});
  CHECK(columnNames(t) == std::vector<std::string>{"Name", "Created At"});
  CHECK(cells(t) == R"J(["admin","2024-06-25T14:00:00Z"])J");
}

TEST_CASE("PartialObjectMetadata keeps the whole ObjectMeta under meta.k8s.io/v1 (N4)") {
  const std::string obj =
      R"J({"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"d","resourceVersion":"5","labels":{"a":"1"},"managedFields":[{"manager":"m"}]},"spec":{"containers":[]}})J";
  CHECK(renderPartialObjectMetadata(obj) ==
        R"J({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p","namespace":"d","resourceVersion":"5","labels":{"a":"1"},"managedFields":[{"manager":"m"}]}})J");
  CHECK(renderPartialObjectMetadataList({obj, R"J({"metadata":{"name":"q","annotations":{"x":"1.5e-07"}}})J"}, {"9", "c", 4}) ==
        R"J({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9","continue":"c","remainingItemCount":4},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p","namespace":"d","resourceVersion":"5","labels":{"a":"1"},"managedFields":[{"manager":"m"}]}},{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"q","annotations":{"x":"1.5e-07"}}}]})J");
}

TEST_CASE("An empty PartialObjectMetadataList has null items, as the apiserver's conversion leaves them (N4)") {
  CHECK(renderPartialObjectMetadataList({}, {"276", "", std::nullopt}) ==
        R"J({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"276"},"items":null})J");
  // A continue token or a count does not change it: only the item count does.
  CHECK(renderPartialObjectMetadataList({}, {"9", "c", 4}).ends_with(R"J(,"items":null})J"));
}

TEST_CASE("Workload controller and service account rows (N3)") {
  const ResourceDef jobs = groupDef("batch", "jobs", "Job");
  CHECK(columnNames(table(jobs, {})) == std::vector<std::string>{"Name", "Status", "Completions", "Duration", "Age",
                                                                 "Containers", "Images", "Selector"});
  const std::string done = R"J({"metadata":{"name":"j"},"spec":{"completions":3,"selector":{"matchLabels":{"job":"j"}},
    "template":{"spec":{"containers":[{"name":"w","image":"busybox"}]}}},"status":{"succeeded":3,
    "startTime":"2024-06-25T14:00:00Z","completionTime":"2024-06-25T14:02:05Z","conditions":[{"type":"Complete","status":"True"}]}})J";
  CHECK(cells(table(jobs, {done})) == R"J(["j","Complete","3/3","2m5s","<unknown>","w","busybox","job=j"])J");
  const std::string running = R"J({"metadata":{"name":"r"},"spec":{"parallelism":2},"status":{"startTime":"2024-06-25T14:59:50Z"}})J";
  CHECK(cells(table(jobs, {running})) == R"J(["r","Running","0/1 of 2","10s","<unknown>","","","<none>"])J");

  const std::string ss = R"J({"metadata":{"name":"db"},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"pg","image":"postgres"}]}}},
    "status":{"readyReplicas":1}})J";
  CHECK(cells(table(groupDef("apps", "statefulsets", "StatefulSet"), {ss})) == R"J(["db","1/3","<unknown>","pg","postgres"])J");

  const std::string ds = R"J({"metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"app":"agent"}},
    "template":{"spec":{"nodeSelector":{"os":"linux"},"containers":[{"name":"a","image":"agent:1"}]}}},
    "status":{"desiredNumberScheduled":3,"currentNumberScheduled":3,"numberReady":2,"updatedNumberScheduled":3,"numberAvailable":2}})J";
  CHECK(cells(table(groupDef("apps", "daemonsets", "DaemonSet"), {ds})) ==
        R"J(["agent",3,3,2,3,2,"os=linux","<unknown>","a","agent:1","app=agent"])J");

  const std::string rc = R"J({"metadata":{"name":"rc"},"spec":{"replicas":2,"selector":{"app":"x"}},"status":{"replicas":2,"readyReplicas":2}})J";
  CHECK(cells(table(coreDef("replicationcontrollers", "ReplicationController"), {rc})) ==
        R"J(["rc",2,2,2,"<unknown>","","","app=x"])J");

  const std::string sa = R"J({"metadata":{"name":"default"},"secrets":[{"name":"t"}]})J";
  CHECK(cells(table(coreDef("serviceaccounts", "ServiceAccount"), {sa})) == R"J(["default",1,"<unknown>"])J");
}

TEST_CASE("events.k8s.io Events print like core Events (N3)") {
  const std::string ev = R"J({"metadata":{"name":"e"},"regarding":{"kind":"Pod","name":"p"},"note":"hello",
    "reason":"Started","type":"Normal","reportingController":"kubelet","reportingInstance":"n1",
    "eventTime":"2024-06-25T14:59:00.000000Z"})J";
  auto t = table(groupDef("events.k8s.io", "events", "Event"), {ev});
  CHECK(columnNames(t).front() == "Last Seen");
  CHECK(cells(t) == R"J(["60s","Normal","Started","pod/p","","kubelet, n1","hello","60s",1,"e"])J");
}
