"""Issue acceptance 3: `kubectl get <type>` prints the same text through the proxy as
against the apiserver, for every type the apiserver lists (N3: Table responses,
including a CRD's additionalPrinterColumns), in the default and wide output, across
all namespaces where the type is namespaced.
"""
import re
import tempfile
import unittest

import clients
import harness
from test_clients import normalized


def columns(text):
    """normalized() with runs of spaces collapsed: kubectl pads columns to the widest
    value, and a masked AGE may be "9s" in one run and "10s" in the other."""
    return re.sub(r" +", " ", normalized(text))


# One object of each type the sample data leaves empty, so that every type prints rows.
SEED = """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
status:
  addresses: [{type: InternalIP, address: 10.0.0.1}]
  conditions: [{type: Ready, status: "True"}]
  nodeInfo: {kubeletVersion: v1.34.0, osImage: Debian 12, kernelVersion: 6.1.0, containerRuntimeVersion: containerd://1.7.0}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: web, namespace: default}
subsets: [{addresses: [{ip: 10.1.0.1}], ports: [{port: 8080}]}]
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: demo}
type: Opaque
data: {k: dg==}
---
apiVersion: v1
kind: Event
metadata: {name: web-0.1, namespace: default}
involvedObject: {kind: Pod, name: web-0, namespace: default}
reason: Started
message: Started container c
type: Normal
count: 1
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-abc, namespace: default, labels: {app: web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: busybox}]}
"""


class KubectlEveryTypeTest(unittest.TestCase):
    def test_kubectl_get_text_is_identical_for_every_listable_type(self):
        processes = harness.Processes()
        self.addCleanup(processes.stop_all)
        workdir = tempfile.mkdtemp()
        apiserver = clients.start_apiserver(processes, "--sample-data")
        upstream = "http://127.0.0.1:%d" % apiserver.port
        direct = clients.Kubectl(upstream, workdir)
        direct.run("apply", "-f", "-", stdin=SEED)
        types = direct.run("api-resources", "--verbs=list", "-o", "name").stdout.split()
        namespaced = set(direct.run("api-resources", "--verbs=list", "--namespaced=true", "-o", "name").stdout.split())
        self.assertIn("widgets.example.com", types)
        # Every listable type cached: what the cache holds it answers, the rest passes through.
        proxy = processes.proxy(upstream, "--cache", ",".join(types))
        harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/readyz")[0] == 200, timeout=20,
                         message="proxy ready")
        proxied = clients.Kubectl("http://127.0.0.1:%d" % proxy.port, workdir)
        compared = 0
        for kind in types:
            for extra in ([], ["-o", "wide"]):
                args = ["get", kind, *extra] + (["-A"] if kind in namespaced else [])
                with self.subTest(args=" ".join(args)):
                    a = direct.run(*args, check=False)
                    b = proxied.run(*args, check=False)
                    self.assertEqual(b.returncode, a.returncode, b.stderr)
                    self.assertEqual(columns(b.stdout), columns(a.stdout))
                    self.assertEqual(columns(b.stderr), columns(a.stderr))
                    compared += a.returncode == 0 and bool(a.stdout.strip())
        # Not vacuous: every type printed rows, in both outputs.
        self.assertEqual(compared, 2 * len(types))


if __name__ == "__main__":
    unittest.main()
