"""Kubernetes' own controllers with the proxy as their apiserver (sidecar shape: the proxy
holds the credentials): kube-controller-manager turns a Deployment into a ReplicaSet and
Pods, kube-scheduler binds the Pods to fake Nodes, and `kubectl rollout status` through
the proxy sees the rollout complete once the Pods report Ready (there is no kubelet, so
the test writes the Pods' status as a kubelet would). Both components ask in protobuf, for
objects and, through their metadata informers (garbage collector, quota), for
PartialObjectMetadata: with --cache-start-wait their reads are answered from the proxy's
protobuf caches (issue 18), and the test reports the share and the apiserver's watches.
"""
import http.client
import json
import re
import ssl
import subprocess
import unittest

import realcluster
from realcluster import Kubectl

import harness

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "through-proxy", "namespace": "default"},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "through-proxy"}},
             "template": {"metadata": {"labels": {"app": "through-proxy"}},
                          "spec": {"containers": [{"name": "c", "image": "registry.example.com/app:1"}]}}},
}


@realcluster.require_bin
class ControllersThroughProxyTest(unittest.TestCase):
    def setUp(self):
        realcluster.start_plane(self, "controllers-real-")

    def start_component(self, argv):
        log = open("%s/%s.log" % (self.workdir, argv[0].rsplit("/", 1)[1]), "w")
        proc = subprocess.Popen(argv, stdout=log, stderr=log)

        def stop():
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log.close()
        self.addCleanup(stop)
        proc.stop = stop
        return proc

    def pods(self):
        a = self.plane.request("/api/v1/namespaces/default/pods?labelSelector=app%3Dthrough-proxy")
        self.assertEqual(a.status, 200, a.body)
        return a.json()["items"]

    def apiserver_watches(self):
        watches = {}
        for line in self.plane.request("/metrics").body.decode().splitlines():
            if line.startswith("apiserver_longrunning_requests{") and 'verb="WATCH"' in line:
                resource = line.split('resource="', 1)[1].split('"', 1)[0]
                watches[resource] = watches.get(resource, 0) + float(line.rsplit(" ", 1)[1])
        return watches

    def report_reads(self, metrics, baseline, watches):
        """How the controllers' reads were answered (issue 18: they ask in protobuf), and the
        watches the apiserver held for them (beyond its own, `baseline`). Watches count once
        they end: call after stopping the components. `metrics`: the proxy's /metrics text."""
        served, upstream = {}, {}
        for line in metrics.splitlines():
            if not line.startswith("kube_cache_proxy_requests_total{"):
                continue
            labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:line.rindex("}")].split(","))
            verb, by = labels["verb"].strip('"'), labels["served_by"].strip('"')
            if verb in ("get", "list", "watch"):
                served[by] = served.get(by, 0) + float(line.rsplit(" ", 1)[1])
                if by == "upstream":
                    key = verb + " " + labels["resource"].strip('"')
                    upstream[key] = upstream.get(key, 0) + int(float(line.rsplit(" ", 1)[1]))
        total = sum(served.values())
        discovery = {m.group(1): int(float(m.group(2))) for m in re.finditer(
            r'kube_cache_proxy_discovery_requests_total\{outcome="(\w+)"\} (\S+)', metrics)}
        extra = {r: int(n - baseline.get(r, 0)) for r, n in sorted(watches.items()) if n - baseline.get(r, 0) > 0}
        print("controllers' GET/LIST/WATCH through the proxy: %s (%.0f%% from the cache); passed through: %s; "
              "discovery: %s; apiserver watches beyond its own, while they ran: %s (%d in all)" % (
                  served, 100 * served.get("cache", 0) / total if total else 0, upstream, discovery, extra,
                  sum(extra.values())))
        return served, upstream, extra

    def test_deployment_gets_replicaset_pods_and_bindings_through_the_proxy(self):
        self.plane.churn(nodes=3, interval="10s")
        baseline = self.apiserver_watches()
        proxy = realcluster.start_proxy(self.processes, self.plane, "--cache",
                                        "pods,nodes,deployments.apps,replicasets.apps", "--cache-start-wait", "5s")
        kubeconfig = realcluster.proxy_kubeconfig(self.workdir, proxy.port)
        self.rollout(kubeconfig, baseline, lambda: harness.http_get("127.0.0.1", proxy.port, "/metrics")[2].decode())

    def test_the_same_through_the_gateway_over_http2(self):
        """Gateway mode (issue 18): the components authenticate with their own token over
        TLS, and client-go negotiates HTTP/2 with the gateway, as with the apiserver."""
        self.plane.churn(nodes=3, interval="10s")
        baseline = self.apiserver_watches()
        pki = harness.make_pki(self.workdir)
        context = ssl.create_default_context(cafile=pki["ca"])
        proxy = realcluster.start_proxy(self.processes, self.plane, "--mode", "gateway", "--tls-cert-file",
                                        pki["server_cert"], "--tls-private-key-file", pki["server_key"], "--cache",
                                        "pods,nodes,deployments.apps,replicasets.apps", "--cache-start-wait", "5s",
                                        who="proxy", tls=context)
        kubeconfig = "%s/gateway-admin.kubeconfig" % self.workdir
        with open(kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: g\n  cluster:\n    server: https://127.0.0.1:%d\n"
                    "    certificate-authority: %s\nusers:\n- name: u\n  user:\n    token: %s\ncontexts:\n- name: g\n"
                    "  context:\n    cluster: g\n    user: u\ncurrent-context: g\n"
                    % (proxy.port, pki["ca"], realcluster.TOKENS["admin"]))

        def metrics():
            conn = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=context, timeout=30)
            conn.request("GET", "/metrics", headers={"Authorization": "Bearer " + realcluster.TOKENS["admin"]})
            body = conn.getresponse().read().decode()
            conn.close()
            return body
        text = self.rollout(kubeconfig, baseline, metrics)
        http2 = re.search(r'kube_cache_proxy_http2_connections_total\{negotiation="alpn"\} (\d+)', text)
        streams = re.search(r"kube_cache_proxy_http2_streams_total (\d+)", text)
        print("gateway: HTTP/2 connections %s, requests on HTTP/2 streams %s" % (
            http2.group(1) if http2 else 0, streams.group(1) if streams else 0))
        self.assertIsNotNone(http2, "the components did not speak HTTP/2 to the gateway")

    def rollout(self, kubeconfig, baseline, metrics):
        """The Deployment rolled out by the components talking to `kubeconfig`'s server;
        returns the proxy's /metrics text after they stopped."""
        kcm = self.start_component([realcluster.tool("kube-controller-manager"), "--kubeconfig", kubeconfig,
                              "--leader-elect=false", "--secure-port=0", "--controllers=*",
                              "--use-service-account-credentials=false",
                              "--service-account-private-key-file", self.plane.dir + "/sa.key",
                              "--root-ca-file", self.plane.ca, "--cluster-signing-cert-file", self.plane.ca,
                              "--cluster-signing-key-file", self.plane.dir + "/ca.key"])
        scheduler = self.start_component([realcluster.tool("kube-scheduler"), "--kubeconfig", kubeconfig,
                              "--leader-elect=false", "--secure-port=0"])

        a = self.plane.request("/apis/apps/v1/namespaces/default/deployments", "POST", DEPLOYMENT)
        self.assertEqual(a.status, 201, a.body)

        def bound():
            pods = self.pods()
            return len(pods) == 3 and all(p["spec"].get("nodeName", "").startswith("fake-node-") for p in pods) and pods
        pods = harness.wait_for(bound, timeout=90, interval=0.5, message=lambda: "3 bound pods, have %s" % [
            (p["metadata"]["name"], p["spec"].get("nodeName")) for p in self.pods()])
        owners = {p["metadata"]["ownerReferences"][0]["kind"] for p in pods}
        self.assertEqual(owners, {"ReplicaSet"})

        # The kubelet's part: each pod reports Running and Ready.
        for p in pods:
            status = {"status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"},
                {"type": "PodScheduled", "status": "True"}, {"type": "Initialized", "status": "True"}],
                "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "x", "imageID": "",
                                       "started": True, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}
            a = self.plane.request("/api/v1/namespaces/default/pods/%s/status" % p["metadata"]["name"], "PATCH",
                                   status, content_type="application/strategic-merge-patch+json")
            self.assertEqual(a.status, 200, a.body)
        kubectl = Kubectl(kubeconfig, self.workdir)
        out = kubectl.run("rollout", "status", "deployment/through-proxy", "--timeout=90s", timeout=120).stdout
        self.assertIn("successfully rolled out", out)
        d = json.loads(kubectl.run("get", "deployment", "through-proxy", "-o", "json").stdout)
        self.assertEqual(d["status"].get("readyReplicas"), 3, d["status"])
        watches = self.apiserver_watches()  # while everything still runs
        kcm.stop()
        scheduler.stop()
        text = metrics()
        served, upstream, _ = self.report_reads(text, baseline, watches)
        # Issue 18: the components ask in protobuf (objects and metadata); their reads come
        # from the protobuf caches and their discovery from the discovery cache. 90 % of all
        # their GET/LIST/WATCH answered upstream or from the cache is the bar; measured
        # 99 % (102 of 103) on the machine with a CI run beside it; the margin is for more load.
        from_cache = served.get("cache", 0) / (served.get("cache", 0) + served.get("upstream", 0))
        self.assertGreaterEqual(from_cache, 0.90, upstream)
        return text


if __name__ == "__main__":
    unittest.main()
