#include "tests/bench/pod_generator.h"

#include <cstdio>

namespace bench {

namespace {

std::string hex(uint64_t value, int digits) {
  std::string out(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i) {
    out[static_cast<size_t>(i)] = "0123456789abcdef"[value & 15];
    value = value * 6364136223846793005ULL + 1442695040888963407ULL;
    value >>= 3;
  }
  return out;
}

}  // namespace

std::string generatePod(int index, uint64_t resource_version, int pods_total) {
  const int namespaces = pods_total >= 1000 ? 50 : 5;
  const std::string ns = "team-" + std::to_string(index % namespaces);
  const std::string rs = "web-" + std::to_string(index / 20 % 997) + "-" + hex(static_cast<uint64_t>(index / 20), 10);
  const std::string name = rs + "-" + hex(static_cast<uint64_t>(index) * 7919, 5);
  const std::string node = "node-" + std::to_string(index % 500);
  const std::string uid = hex(static_cast<uint64_t>(index), 8) + "-" + hex(index * 3ULL, 4) + "-4" + hex(index * 5ULL, 3) +
                          "-a" + hex(index * 7ULL, 3) + "-" + hex(index * 11ULL, 12);
  // Variable-length escaped JSON makes item sizes spread over ~4.4-6.2 KB.
  std::string last_applied = R"({\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"annotations\":{},\"name\":\")" + name +
                             R"(\",\"namespace\":\")" + ns + R"(\"},\"spec\":{\"containers\":[)";
  for (int c = 0; c < 3 + index % 9; ++c) {
    last_applied += (c ? "," : "") + std::string(R"({\"image\":\"registry.example.com/app:v1.)") + std::to_string(c) +
                    R"(\",\"name\":\"c)" + std::to_string(c) + R"(\"})";
  }
  last_applied += R"(]}}\n)";

  std::string pod;
  pod.reserve(6400);
  pod += R"({"metadata":{"name":")" + name + R"(","generateName":")" + rs + R"(-","namespace":")" + ns + R"(","uid":")" +
         uid + R"(","resourceVersion":")" + std::to_string(resource_version) +
         R"(","creationTimestamp":"2024-05-01T10:00:00Z","labels":{"app":"web","app.kubernetes.io/instance":"web-)" +
         std::to_string(index % 13) + R"(","env":"prod","pod-template-hash":")" + hex(static_cast<uint64_t>(index / 20), 10) +
         R"(","team":"team-)" + std::to_string(index % 50) + R"(","version":"v1.)" + std::to_string(index % 4) +
         R"("},"annotations":{"checksum/config":")" + hex(static_cast<uint64_t>(index), 32) + hex(index * 13ULL, 32) +
         R"(","kubectl.kubernetes.io/last-applied-configuration":")" + last_applied +
         R"(","prometheus.io/port":"9090","prometheus.io/scrape":"true"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":")" +
         rs + R"(","uid":")" + uid + R"(","controller":true,"blockOwnerDeletion":true}],)";
  pod += R"("managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2024-05-01T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:env":{},"f:pod-template-hash":{},"f:team":{},"f:version":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\")" +
         uid + R"(\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"LOG_LEVEL\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"PORT\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}},)";
  pod += R"({"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2024-05-01T10:00:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.1.2.3\"}":{".":{},"f:ip":{}}},"f:startTime":{}}},"subresource":"status"}]},)";
  pod += R"("spec":{"volumes":[{"name":"kube-api-access-)" + hex(static_cast<uint64_t>(index), 5) +
         R"(","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],"containers":[{"name":"app","image":"registry.example.com/app:v1.)" +
         std::to_string(index % 4) +
         R"(","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"env":[{"name":"LOG_LEVEL","value":"info"},{"name":"PORT","value":"8080"}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"volumeMounts":[{"name":"kube-api-access","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":")" +
         node +
         R"(","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},)";
  pod += R"("status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2024-05-01T10:00:00Z"},{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2024-05-01T10:00:05Z"},{"type":"ContainersReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2024-05-01T10:00:05Z"},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2024-05-01T10:00:00Z"}],"hostIP":"10.0.)" +
         std::to_string(index % 250) + "." + std::to_string(index % 200) + R"(","podIP":"10.1.)" + std::to_string(index / 250 % 250) +
         "." + std::to_string(index % 250) +
         R"(","startTime":"2024-05-01T10:00:00Z","containerStatuses":[{"name":"app","state":{"running":{"startedAt":"2024-05-01T10:00:04Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"registry.example.com/app:v1.0","imageID":"registry.example.com/app@sha256:)" +
         hex(static_cast<uint64_t>(index % 4), 64) + R"(","containerID":"containerd://)" + hex(static_cast<uint64_t>(index), 64) +
         R"(","started":true}],"qosClass":"Burstable"}})";
  return pod;
}

std::string generatePodList(int first, int count, uint64_t list_rv, int pods_total) {
  std::string body = R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":")" + std::to_string(list_rv) +
                     R"("},"items":[)";
  body.reserve(static_cast<size_t>(count) * 5400 + 128);
  for (int i = first; i < first + count; ++i) {
    if (i != first) body += ',';
    body += generatePod(i, 1000 + static_cast<uint64_t>(i), pods_total);
  }
  body += "]}";
  return body;
}

}  // namespace bench
