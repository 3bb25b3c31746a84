"""Kubernetes' own controllers with the proxy as their apiserver (sidecar shape: the proxy
holds the credentials): kube-controller-manager turns a Deployment into a ReplicaSet and
Pods, kube-scheduler binds the Pods to fake Nodes, and `kubectl rollout status` through
the proxy sees the rollout complete once the Pods report Ready (there is no kubelet, so
the test writes the Pods' status as a kubelet would).
"""
import json
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
        return proc

    def pods(self):
        a = self.plane.request("/api/v1/namespaces/default/pods?labelSelector=app%3Dthrough-proxy")
        self.assertEqual(a.status, 200, a.body)
        return a.json()["items"]

    def test_deployment_gets_replicaset_pods_and_bindings_through_the_proxy(self):
        self.plane.churn(nodes=3, interval="10s")
        proxy = realcluster.start_proxy(self.processes, self.plane, "--cache",
                                        "pods,nodes,deployments.apps,replicasets.apps")
        kubeconfig = realcluster.proxy_kubeconfig(self.workdir, proxy.port)
        self.start_component([realcluster.tool("kube-controller-manager"), "--kubeconfig", kubeconfig,
                              "--leader-elect=false", "--secure-port=0", "--controllers=*",
                              "--use-service-account-credentials=false",
                              "--service-account-private-key-file", self.plane.dir + "/sa.key",
                              "--root-ca-file", self.plane.ca, "--cluster-signing-cert-file", self.plane.ca,
                              "--cluster-signing-key-file", self.plane.dir + "/ca.key"])
        self.start_component([realcluster.tool("kube-scheduler"), "--kubeconfig", kubeconfig,
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


if __name__ == "__main__":
    unittest.main()
