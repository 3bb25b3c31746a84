"""The types the real-cluster differential test reads beside tests/integration/
read_requests.RESOURCES (which the bundled test apiserver serves): secrets, services,
endpointslices, leases, core events and replicasets, with the field selectors
kube-apiserver v1.37 accepts for each (pkg/apis/core/v1/conversion.go: secrets `type`,
services `spec.clusterIP`/`spec.type`, events `involvedObject.*`, `reason`,
`reportingComponent`, `source`, `type`; apps/v1, discovery and coordination register no
conversion, so only metadata.name/namespace, and replicasets reject `status.replicas`
although their registry computes it). Also the objects `load()` creates for them.
"""
import base64

from read_requests import Resource

SECRET_TYPES = ["Opaque", "kubernetes.io/tls", "kubernetes.io/dockerconfigjson", "kubernetes.io/basic-auth",
                "kubernetes.io/ssh-auth", "kubernetes.io/service-account-token"]
SERVICE_KINDS = ["static", "ClusterIP", "ClusterIP", "headless", "NodePort", "ExternalName", "LoadBalancer", "multi"]
# Static ClusterIPs come from the lower band of --service-cluster-ip-range 10.0.0.0/24,
# which the allocator hands out dynamically only when the upper band is full.
STATIC_IPS = ["10.0.0.%d" % (2 + k) for k in range(6)]
REASONS = ["Scheduled", "Pulled", "Created", "Started", "BackOff", "Killing", "SuccessfulCreate", "ScalingReplicaSet",
           "NodeReady", "LeaderElection"]
COMPONENTS = ["kubelet", "default-scheduler", "replicaset-controller", "deployment-controller"]
MICRO = "2026-01-01T00:%02d:%02d.%06dZ"


def event_uid(i):
    return "00000000-0000-4000-8000-%012d" % i


def _meta(name, ns, labels):
    return {"name": name, "namespace": ns, "labels": labels}


def _b64(text):
    return base64.b64encode(text.encode()).decode()


EVENT_FIELDS = {
    "metadata.name": None, "metadata.namespace": None,
    "involvedObject.kind": lambda r, u: r.choice(["Pod", "Node", "ReplicaSet", "Lease", ""]),
    "involvedObject.namespace": lambda r, u: r.choice(u.namespaces + [""]),
    "involvedObject.name": lambda r, u: r.choice(["pod-%d" % r.randrange(80), "fake-node-0", "web-3", "nope"]),
    "involvedObject.uid": lambda r, u: r.choice([event_uid(r.randrange(80)), ""]),
    "involvedObject.apiVersion": lambda r, u: r.choice(["v1", "apps/v1", "coordination.k8s.io/v1", ""]),
    "involvedObject.resourceVersion": lambda r, u: r.choice(["", str(1000 + r.randrange(80))]),
    "involvedObject.fieldPath": lambda r, u: r.choice(["spec.containers{main}", ""]),
    "reason": lambda r, u: r.choice(REASONS + [""]),
    "reportingComponent": lambda r, u: r.choice(COMPONENTS + [""]),
    "source": lambda r, u: r.choice(COMPONENTS + [""]),
    "type": lambda r, u: r.choice(["Normal", "Warning", ""]),
}

REAL_EXTRA_RESOURCES = [
    Resource("", "v1", "secrets", True, 8, True, ["app", "team", "missing"],
             {"metadata.name": None, "metadata.namespace": None,
              "type": lambda r, u: r.choice(SECRET_TYPES + ["", "example.com/custom"])},
             ["data.password", "immutable", "spec.type"]),
    Resource("", "v1", "services", True, 7, True, ["app", "tier", "missing"],
             {"metadata.name": None, "metadata.namespace": None,
              "spec.clusterIP": lambda r, u: r.choice(STATIC_IPS + ["None", "", "10.0.0.200"]),
              "spec.type": lambda r, u: r.choice(["ClusterIP", "NodePort", "LoadBalancer", "ExternalName", ""])},
             ["spec.externalName", "status.loadBalancer", "spec.ports"]),
    Resource("discovery.k8s.io", "v1", "endpointslices", True, 6, True,
             ["kubernetes.io/service-name", "endpointslice.kubernetes.io/managed-by", "app", "missing"],
             {"metadata.name": None, "metadata.namespace": None}, ["addressType", "spec.serviceName"],
             label_values={"kubernetes.io/service-name": lambda r: "svc-%d" % r.randrange(52),
                           "endpointslice.kubernetes.io/managed-by": lambda r: r.choice(
                               ["endpointslice-controller.k8s.io", "x"])}),
    Resource("coordination.k8s.io", "v1", "leases", True, 6, True,
             ["app", "apiserver.kubernetes.io/identity", "missing"],
             {"metadata.name": None, "metadata.namespace": None}, ["spec.holderIdentity", "spec.renewTime"],
             label_values={"apiserver.kubernetes.io/identity": lambda r: r.choice(["kube-apiserver", "x"])}),
    Resource("", "v1", "events", True, 9, True, ["app", "missing"], EVENT_FIELDS,
             ["message", "involvedObject", "count", "reportingInstance"], watch_cached=False),
    Resource("apps", "v1", "replicasets", True, 7, True, ["app", "tier", "pod-template-hash", "missing"],
             {"metadata.name": None, "metadata.namespace": None}, ["status.replicas", "spec.replicas"],
             label_values={"pod-template-hash": lambda r: "5d8f%d" % r.randrange(1000, 1040)}),
]

PATHS = {"secrets": "/api/v1/namespaces/%s/secrets", "services": "/api/v1/namespaces/%s/services",
         "endpointslices": "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices",
         "leases": "/apis/coordination.k8s.io/v1/namespaces/%s/leases", "events": "/api/v1/namespaces/%s/events",
         "replicasets": "/apis/apps/v1/namespaces/%s/replicasets"}


def secret(ns, name, i):
    kind = SECRET_TYPES[i % len(SECRET_TYPES)]
    pem = "-----BEGIN %s-----\nMIIB%d\n-----END %s-----\n"
    data = {"Opaque": {"password": _b64("s3cret-%d" % i), "config.yaml": _b64("level: %d\n" % i)},
            # Only the keys are validated; a pair that does not match draws a Warning header.
            "kubernetes.io/tls": {"tls.crt": _b64(pem % ("CERTIFICATE", i, "CERTIFICATE")),
                                  "tls.key": _b64(pem % ("PRIVATE KEY", i, "PRIVATE KEY"))},
            "kubernetes.io/dockerconfigjson": {".dockerconfigjson": _b64(
                '{"auths":{"registry.example.com":{"auth":"%s"}}}' % _b64("user:pw%d" % i))},
            "kubernetes.io/basic-auth": {"username": _b64("user-%d" % i), "password": _b64("pw-%d" % i)},
            "kubernetes.io/ssh-auth": {"ssh-privatekey": _b64("-----BEGIN OPENSSH PRIVATE KEY-----\n%d\n" % i)},
            "kubernetes.io/service-account-token": {}}[kind]
    meta = _meta(name, ns, {"app": "app-%d" % (i % 50), "team": "team-%d" % (i % 7)})
    if kind == "kubernetes.io/service-account-token":
        meta["annotations"] = {"kubernetes.io/service-account.name": "builder"}
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": kind, "data": data}
    if i % 5 == 0:
        body["immutable"] = True
    return body


def service(ns, i):
    kind = SERVICE_KINDS[i % len(SERVICE_KINDS)]
    ports = [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]
    if kind == "multi":
        ports += [{"name": "grpc", "port": 9090, "targetPort": "grpc", "protocol": "TCP", "appProtocol": "grpc"},
                  {"name": "dns", "port": 53, "protocol": "UDP"}]
    spec = {"selector": {"app": "app-%d" % (i % 50)}, "ports": ports}
    if kind == "static":
        spec["clusterIP"] = STATIC_IPS[i // len(SERVICE_KINDS) % len(STATIC_IPS)]
    elif kind == "headless":
        spec["clusterIP"] = "None"
    elif kind in ("NodePort", "LoadBalancer"):
        spec["type"] = kind
        spec["externalTrafficPolicy"] = "Local" if i % 2 else "Cluster"
    elif kind == "ExternalName":
        spec = {"type": "ExternalName", "externalName": "db-%d.example.com" % i}
    return {"apiVersion": "v1", "kind": "Service", "spec": spec,
            "metadata": _meta("svc-%d" % i, ns, {"app": "app-%d" % (i % 50), "tier": ["backend", "frontend"][i % 2]})}


def endpointslice(ns, i, nodes):
    endpoints = [{"addresses": ["10.244.%d.%d" % (i % 250, k + 2)],
                  "conditions": {"ready": k != 2, "serving": True, "terminating": False},
                  "nodeName": "fake-node-%d" % ((i + k) % nodes), "zone": "zone-%d" % (k % 2),
                  "targetRef": {"kind": "Pod", "namespace": ns, "name": "pod-%d" % (i + 6 * k)}}
                 for k in range(i % 4)]
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": _meta("svc-%d-%05x" % (i, 0xa1b2c + i), ns, {
                "kubernetes.io/service-name": "svc-%d" % i, "app": "app-%d" % (i % 50),
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}),
            "endpoints": endpoints, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def lease(ns, name, i):
    spec = {"leaseDurationSeconds": 15, "leaseTransitions": i % 4,
            "acquireTime": MICRO % (i % 60, i % 60, 1000 + i), "renewTime": MICRO % (i % 60, (i + 7) % 60, 123456 + i)}
    if i % 5:  # a released lease has no holder
        spec["holderIdentity"] = "controller-%d_%08x" % (i % 3, 0x5eed + i)
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": spec,
            "metadata": _meta(name, ns, {"app": "app-%d" % (i % 50)})}


def event(ns, i, name=None):
    """A kubelet-style event about pod-i (pod-i lives in load-(i % 6)), a scheduler one, or
    one in the events.k8s.io shape (eventTime, reportingComponent, no source), whose
    `source` field selector falls back to reportingComponent; Node events live in default."""
    style = i % 4
    obj = {"kind": "Pod", "namespace": ns, "name": "pod-%d" % i, "uid": event_uid(i), "apiVersion": "v1",
           "resourceVersion": str(1000 + i)}
    if style == 0:
        obj["fieldPath"] = "spec.containers{main}"
    if style == 3:
        obj = {"kind": "Node", "name": "fake-node-%d" % (i % 5), "uid": event_uid(i), "apiVersion": "v1"}
        ns = "default"
    body = {"apiVersion": "v1", "kind": "Event", "involvedObject": obj, "reason": REASONS[i % len(REASONS)],
            "message": "event %d about %s" % (i, obj["name"]), "type": ["Normal", "Warning"][i % 3 == 0],
            "metadata": _meta(name or "%s.%016x" % (obj["name"], 0x17a8b00000000000 + i), ns,
                              {"app": "app-%d" % (i % 50)} if i % 2 else {})}
    if style == 2:
        body.update({"eventTime": MICRO % (i % 60, i % 60, 654321), "action": "Binding",
                     "reportingComponent": COMPONENTS[i % len(COMPONENTS)], "reportingInstance": "instance-%d" % i})
    else:
        body.update({"source": {"component": COMPONENTS[style], "host": "fake-node-%d" % (i % 5)},
                     "firstTimestamp": "2026-01-01T00:00:%02dZ" % (i % 60),
                     "lastTimestamp": "2026-01-01T00:01:%02dZ" % (i % 60), "count": 1 + i % 9})
    return body


def replicaset(ns, i):
    labels = {"app": "app-%d" % (i % 50), "pod-template-hash": "5d8f%d" % (1000 + i % 40),
              "tier": ["backend", "frontend"][i % 2]}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": dict(_meta("web-%d" % i, ns, labels),
                             annotations={"deployment.kubernetes.io/revision": str(1 + i % 3)}),
            "spec": {"replicas": i % 4, "minReadySeconds": i % 3,
                     "selector": {"matchLabels": {k: labels[k] for k in ("app", "pod-template-hash")}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main",
                                                           "image": "registry.example.com/app-%d:1.2.3" % (i % 50),
                                                           "ports": [{"containerPort": 8080, "name": "http"}]}]}}}}


def load_jobs(namespaces, nodes, count=48):
    """(path, body) for `count` objects of each extra type across load-0..namespaces-1:
    object i lives in load-(i % namespaces), like pod-i."""
    jobs = []
    for i in range(count):
        ns = "load-%d" % (i % namespaces)
        ev = event(ns, i)
        jobs += [(PATHS["secrets"] % ns, secret(ns, "secret-%d" % i, i)), (PATHS["services"] % ns, service(ns, i)),
                 (PATHS["endpointslices"] % ns, endpointslice(ns, i, nodes)),
                 (PATHS["leases"] % ns, lease(ns, "lease-%d" % i, i)),
                 (PATHS["events"] % ev["metadata"]["namespace"], ev), (PATHS["replicasets"] % ns, replicaset(ns, i))]
    return jobs
