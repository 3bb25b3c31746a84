"""The workload side of a node fleet (fleet.py): kube-controller-manager and kube-scheduler,
the density Deployment of Kubernetes' scalability tests, and pod startup times as a watcher of
the apiserver sees them. Used by test_real_node_fleet.py and bench_fleet.py.
"""
import json
import os
import socket
import subprocess
import threading
import time

import realcluster

import harness


class Components:
    """kube-controller-manager and kube-scheduler against the apiserver (admin credentials),
    logs in `workdir`; stopped by PID."""

    def __init__(self, plane, workdir):
        kubeconfig = plane.kubeconfig("admin")
        self.procs = []
        for argv in ([realcluster.tool("kube-controller-manager"), "--kubeconfig", kubeconfig, "--leader-elect=false",
                      "--secure-port=0", "--controllers=*", "--use-service-account-credentials=false",
                      "--service-account-private-key-file", os.path.join(plane.dir, "sa.key"),
                      "--root-ca-file", plane.ca, "--kube-api-qps", "100", "--kube-api-burst", "200",
                      "--concurrent-replicaset-syncs", "10"],
                     [realcluster.tool("kube-scheduler"), "--kubeconfig", kubeconfig, "--leader-elect=false",
                      "--secure-port=0"]):
            with open(os.path.join(workdir, os.path.basename(argv[0]) + ".log"), "w") as log:
                self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def ready_nodes(plane, prefix):
    """Names of the nodes PREFIX-* whose Ready condition is True."""
    a = plane.request("/api/v1/nodes")
    assert a.status == 200, a.body
    return {n["metadata"]["name"] for n in a.json()["items"] if n["metadata"]["name"].startswith(prefix + "-")
            and any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))}


class PodTimes:
    """Watches the pods of a namespace directly at the apiserver: the time each was first seen
    (its creation, as a watcher sees it) and first seen Running (as its kubelet reported it).

    The reader thread only stamps and keeps each line: parsing waits for the questions, so
    that on a saturated machine the reader keeps up with the apiserver, which ends a watch
    whose client falls behind its buffer. If it ends it anyway, the watch resumes after the
    last event seen (`resumed` counts it: events read late are timed late)."""

    def __init__(self, plane, namespace):
        self.plane, self.ns = plane, namespace
        self.lines, self.resumed = [], 0
        self.closed = threading.Event()
        self.conn, self.response = self._watch("")
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _watch(self, resource_version):
        conn = self.plane.connection(timeout=3600)
        path = "/api/v1/namespaces/%s/pods?watch=1&allowWatchBookmarks=true" % self.ns
        if resource_version:
            path += "&resourceVersion=" + resource_version
        conn.request("GET", path, headers={"Authorization": "Bearer " + realcluster.TOKENS["admin"]})
        response = conn.getresponse()
        assert response.status == 200, response.status
        return conn, response

    def _read(self):
        while not self.closed.is_set():
            try:
                for line in self.response:
                    self.lines.append((time.monotonic(), line))
            except (OSError, ValueError):
                pass
            if self.closed.is_set():
                return
            try:
                self.conn, self.response = self._watch(self._resume_from())
                self.resumed += 1
            except (OSError, AssertionError):
                time.sleep(0.5)

    def _resume_from(self):
        """The RV of the last event; "" (now) after an ERROR (the RV expired)."""
        for _, line in reversed(self.lines):
            event = json.loads(line)
            if event["type"] == "ERROR":
                return ""
            return event["object"]["metadata"]["resourceVersion"]
        return ""

    def _pods(self):
        """{uid: [created, running or None, node, deleted]} from the lines read so far."""
        pods = {}
        for now, line in list(self.lines):
            event = json.loads(line)
            if event["type"] in ("BOOKMARK", "ERROR"):
                continue
            pod = event["object"]
            p = pods.setdefault(pod["metadata"]["uid"], [now, None, "", False])
            if event["type"] == "DELETED":
                p[3] = True
            elif pod.get("status", {}).get("phase") == "Running" and p[1] is None:
                p[1], p[2] = now, pod["spec"].get("nodeName", "")
        return pods

    def running_count(self):
        return len([p for p in self._pods().values() if p[1] is not None and not p[3]])

    def latencies(self, node_prefix=""):
        """Seconds from creation to Running of each pod that ran on a node NODE_PREFIX*."""
        return sorted(p[1] - p[0] for p in self._pods().values() if p[1] is not None and p[2].startswith(node_prefix))

    def close(self):
        # The reader thread holds the response's buffer lock while it waits for a line:
        # closing the response first would wait for that lock forever. A shut down socket
        # ends the read, then the thread, then the rest closes.
        self.closed.set()
        try:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass
        self.thread.join(10)
        self.conn.close()


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100.0 * (len(values) - 1))))]


class Density:
    """The density workload of Kubernetes' scalability tests, small: a Deployment whose pods
    mount a ConfigMap and a Secret (so each kubelet fetches and watches them by name, as the
    Node authorizer allows for pods bound to it) and spread evenly over the nodes (one
    topology spread constraint on the hostname), scaled up and down."""

    def __init__(self, plane, namespace="density", name="density"):
        self.plane, self.ns, self.name = plane, namespace, name
        for path, body in (("/api/v1/namespaces", {"metadata": {"name": namespace}}),
                           ("/api/v1/namespaces/%s/configmaps" % namespace,
                            {"metadata": {"name": "density-config"}, "data": {"a": "1"}}),
                           ("/api/v1/namespaces/%s/secrets" % namespace,
                            {"metadata": {"name": "density-secret"}, "data": {"b": "Mg=="}})):
            a = plane.request(path, "POST", body)
            assert a.status in (201, 409), a.body

    def deploy(self, replicas, node_selector=None):
        labels = {"app": self.name}
        spec = {"containers": [{"name": "c", "image": "registry.example.com/pause:3.10",
                                "volumeMounts": [{"name": "config", "mountPath": "/config"},
                                                 {"name": "secret", "mountPath": "/secret"}]}],
                "volumes": [{"name": "config", "configMap": {"name": "density-config"}},
                            {"name": "secret", "secret": {"secretName": "density-secret"}}],
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                               "whenUnsatisfiable": "DoNotSchedule",
                                               "labelSelector": {"matchLabels": labels}}],
                # Not 0: a pod with no grace period is removed by the apiserver at once; with
                # one, its kubelet stops it and then deletes it (a write NodeRestriction
                # allows only for pods bound to the writer's node), as in a real cluster.
                "terminationGracePeriodSeconds": 1}
        if node_selector:
            spec["nodeSelector"] = node_selector
        a = self.plane.request("/apis/apps/v1/namespaces/%s/deployments" % self.ns, "POST", {
            "metadata": {"name": self.name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}})
        assert a.status == 201, a.body

    def scale(self, replicas):
        a = self.plane.request("/apis/apps/v1/namespaces/%s/deployments/%s/scale" % (self.ns, self.name), "PATCH",
                               {"spec": {"replicas": replicas}}, content_type="application/merge-patch+json")
        assert a.status == 200, a.body

    def pods(self):
        a = self.plane.request("/api/v1/namespaces/%s/pods?labelSelector=app%%3D%s" % (self.ns, self.name))
        assert a.status == 200, a.body
        return a.json()["items"]

    def running(self, pods=None):
        """Pods Running and not being deleted, by node."""
        out = {}
        for p in self.pods() if pods is None else pods:
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp"):
                out.setdefault(p["spec"].get("nodeName", ""), []).append(p["metadata"]["name"])
        return out

    def wait_running(self, replicas, timeout, check=lambda: None):
        """Waits until exactly `replicas` pods exist and all run (the ones scaled away deleted
        by their kubelets); returns {node: [pods]}."""
        def done():
            check()
            pods = self.pods()
            running = self.running(pods)
            return len(pods) == replicas and sum(map(len, running.values())) == replicas and (running or replicas == 0)
        # Every 2 s: a LIST parsed here holds the GIL that the pod watch's reader needs.
        harness.wait_for(done, timeout=timeout, interval=2, message=lambda: "%d pods running, have %d of %d" % (
            replicas, sum(map(len, self.running().values())), len(self.pods())))
        return self.running()


