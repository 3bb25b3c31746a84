// Objects the server creates on its own: the default namespaces, the demo data of
// --sample-data, realistic bulk objects (control/load) and background churn.
#include <random>

#include "tests/apiserver/handlers/api_server.h"

namespace testapi {
namespace {

// A pod like a Deployment's in a real cluster: labels, annotations, owner
// reference, managedFields, one container with probes and resources, and a
// status with conditions. Serialized it is about 4-6 KB.
std::string realisticPod(const std::string& ns, const std::string& name, const std::string& node, int i) {
  std::string app = "app-" + std::to_string(i % 50);
  std::string hash = "5d8f" + std::to_string(1000 + i % 9000);
  std::string uid_owner = "0a1b2c3d-0000-4000-8000-" + std::to_string(100000000000LL + i % 50);
  std::string s = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":")" + ns +
                  R"(","labels":{"app":")" + app + R"(","pod-template-hash":")" + hash +
                  R"(","tier":"backend","team":"team-)" + std::to_string(i % 7) + R"(","version":"v1.)" +
                  std::to_string(i % 13) + R"("},"annotations":{"kubectl.kubernetes.io/restartedAt":"2025-01-01T00:00:00Z","prometheus.io/scrape":"true","prometheus.io/port":"9090","checksum/config":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":")" +
                  app + "-" + hash + R"(","uid":")" + uid_owner +
                  R"(","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\")" +
                  uid_owner + R"(\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}},{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2025-01-01T00:00:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.0.0.1\"}":{".":{},"f:ip":{}}},"f:startTime":{}}},"subresource":"status"}]},)";
  s += R"("spec":{"volumes":[{"name":"kube-api-access","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],"containers":[{"name":"main","image":"registry.example.com/)" +
       app + R"(:1.2.3","ports":[{"containerPort":8080,"protocol":"TCP"}],"env":[{"name":"LOG_LEVEL","value":"info"},{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"volumeMounts":[{"name":"kube-api-access","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"livenessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"readinessProbe":{"httpGet":{"path":"/ready","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":5,"successThreshold":1,"failureThreshold":3},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":")" +
       node + R"(","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},)";
  std::string ip = "10.0." + std::to_string((i / 250) % 250) + "." + std::to_string(i % 250 + 1);
  s += R"("status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2025-01-01T00:00:00Z"},{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2025-01-01T00:00:05Z"},{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2025-01-01T00:00:05Z"},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2025-01-01T00:00:00Z"}],"hostIP":"192.168.0.)" +
       std::to_string(i % 200 + 1) + R"(","podIP":")" + ip + R"(","podIPs":[{"ip":")" + ip +
       R"("}],"startTime":"2025-01-01T00:00:00Z","containerStatuses":[{"name":"main","state":{"running":{"startedAt":"2025-01-01T00:00:03Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"registry.example.com/)" +
       app + R"(:1.2.3","imageID":"registry.example.com/)" + app +
       R"(@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","containerID":"containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","started":true}],"qosClass":"Burstable"}})";
  return s;
}

std::string simpleObject(const ServedResource& res, const std::string& ns, const std::string& name, int i) {
  std::string meta = R"("metadata":{"name":")" + name + "\"" + (res.def.namespaced ? R"(,"namespace":")" + ns + "\"" : "") +
                     R"(,"labels":{"app":"app-)" + std::to_string(i % 50) + R"("}})";
  std::string tm = "\"apiVersion\":" + jsonQuote(res.def.groupVersion()) + ",\"kind\":" + jsonQuote(res.def.kind) + ",";
  if (res.def.resource == "configmaps")
    return "{" + tm + meta + R"(,"data":{"config.yaml":"key: value-)" + std::to_string(i) + R"(\nother: 1\n","mode":"production"}})";
  if (res.def.resource == "deployments")
    return "{" + tm + meta + R"(,"spec":{"replicas":2,"selector":{"matchLabels":{"app":")" + name + R"("}},"template":{"metadata":{"labels":{"app":")" + name + R"("}},"spec":{"containers":[{"name":"main","image":"nginx:1.27"}]}}},"status":{"replicas":2,"readyReplicas":2,"availableReplicas":2,"updatedReplicas":2}})";
  if (res.def.resource == "widgets")
    return "{" + tm + meta + R"(,"spec":{"color":")" + std::string(i % 2 ? "blue" : "red") + R"(","size":)" + std::to_string(i % 10) + "}}";
  return "{" + tm + meta + "}";
}

}  // namespace

void ApiServer::createDefaultNamespaces() {
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    rapidjson::Document doc;
    doc.Parse((std::string(R"({"metadata":{"name":")") + ns + "\",\"labels\":{\"kubernetes.io/metadata.name\":\"" + ns + "\"}}}").c_str());
    createObject(namespaces(), "", doc, false);
  }
}

size_t ApiServer::loadObjects(const ServedResource& res, size_t count, size_t namespace_count, size_t nodes) {
  if (namespace_count == 0) namespace_count = 1;
  if (nodes == 0) nodes = 1;
  std::vector<std::string> nss;
  for (size_t k = 0; k < namespace_count; ++k) {
    std::string ns = "load-" + std::to_string(k);
    nss.push_back(ns);
    rapidjson::Document doc;
    doc.Parse((R"({"metadata":{"name":")" + ns + "\"}}").c_str());
    createObject(namespaces(), "", doc, false);
  }
  if (const auto* node_res = catalog_.find("", "v1", "nodes"); node_res && res.def.resource == "pods") {
    for (size_t n = 0; n < nodes; ++n) {
      rapidjson::Document doc;
      doc.Parse((R"({"metadata":{"name":"node-)" + std::to_string(n) + R"(","labels":{"kubernetes.io/os":"linux"}},"spec":{},"status":{"phase":"Running"}})").c_str());
      createObject(*node_res, "", doc, false);
    }
  }
  thread_local std::mt19937 rng{std::random_device{}()};
  const std::string batch = std::to_string(rng() % 100000);
  size_t created = 0;
  for (size_t i = 0; i < count; ++i) {
    const std::string& ns = nss[i % nss.size()];
    std::string name = res.def.resource.substr(0, res.def.resource.size() - 1) + "-" + batch + "-" + std::to_string(i);
    std::string json = res.def.resource == "pods"
                           ? realisticPod(ns, name, "node-" + std::to_string(i % nodes), static_cast<int>(i))
                           : simpleObject(res, ns, name, static_cast<int>(i));
    rapidjson::Document doc;
    doc.Parse(json.data(), json.size());
    if (std::holds_alternative<StoredObjectPtr>(createObject(res, res.def.namespaced ? ns : "", doc, false))) ++created;
  }
  return created;
}

void ApiServer::loadSampleData() {
  auto create = [&](const char* group, const char* resource, const std::string& ns, const std::string& json) {
    const auto* res = catalog_.find(group, group[0] ? "v1" : "v1", resource);
    if (!res) return;
    rapidjson::Document doc;
    doc.Parse(json.data(), json.size());
    createObject(*res, ns, doc, false);
  };
  for (const char* ns : {"demo", "team-a"})
    create("", "namespaces", "", std::string(R"({"metadata":{"name":")") + ns + "\"}}");
  for (int i = 0; i < 3; ++i) {
    create("", "pods", "default", realisticPod("default", "web-" + std::to_string(i), "node-0", i));
    create("", "pods", "demo", realisticPod("demo", "api-" + std::to_string(i), "node-1", i + 10));
  }
  for (const auto& r : catalog_.resources()) {
    if (r.def.resource == "configmaps" || r.def.resource == "deployments" || r.def.resource == "widgets")
      for (int i = 0; i < 2; ++i) {
        std::string name = r.def.singular + "-" + std::to_string(i);
        rapidjson::Document doc;
        std::string json = simpleObject(r, "default", name, i);
        doc.Parse(json.data(), json.size());
        createObject(r, "default", doc, false);
      }
  }
}

void ApiServer::startChurn(double rate, int seconds) {
  const auto* pods = catalog_.find("", "v1", "pods");
  const auto* cms = catalog_.find("", "v1", "configmaps");
  if (!pods || !cms || rate <= 0) return;
  {
    rapidjson::Document doc;
    doc.Parse(R"({"metadata":{"name":"churn"}})");
    createObject(namespaces(), "", doc, false);
  }
  std::lock_guard lk(churn_mu_);
  churn_threads_.emplace_back([this, pods, cms, rate, seconds](std::stop_token stop) {
    std::mt19937 rng{std::random_device{}()};
    const auto period = std::chrono::duration<double>(1.0 / rate);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    auto next = std::chrono::steady_clock::now();
    for (int i = 0; !stop.stop_requested() && std::chrono::steady_clock::now() < end; ++i) {
      const ServedResource& res = (rng() % 2) ? *pods : *cms;
      const std::string name = "churn-" + std::to_string(rng() % 50);
      auto existing = storage_.get(res, "churn", name);
      rapidjson::Document doc;
      if (!existing) {
        std::string json = res.def.resource == "pods" ? realisticPod("churn", name, "node-0", i) : simpleObject(res, "churn", name, i);
        doc.Parse(json.data(), json.size());
        createObject(res, "churn", doc, false);
      } else if (rng() % 3 == 0) {
        storage_.mutate(res, "churn", name, [&](const StoredObjectPtr& cur, uint64_t next_rv) -> Result<Storage::Mutation> {
          Storage::Mutation m;
          if (!cur) return m;
          m.action = Storage::Mutation::Action::Remove;
          m.object = withResourceVersion(res, *cur, next_rv);
          return m;
        });
      } else {
        RequestInfo info;
        info.ns = "churn";
        info.name = name;
        updateObject(res, info, "", [&](const StoredObject& cur, rapidjson::Document& d) -> Result<bool> {
          parseStored(cur, d);
          auto& meta = d["metadata"];
          auto& ann = ensureObject(meta, "annotations", d.GetAllocator());
          setString(ann, "churn/counter", std::to_string(i), d.GetAllocator());
          meta.RemoveMember("resourceVersion");
          return true;
        }, false, false);
      }
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
      std::this_thread::sleep_until(next);
    }
  });
}

}  // namespace testapi
