"""Real clients (kubectl, @kubernetes/client-node, python-kubernetes) against the
bundled test apiserver directly and through kube-cache-proxy, and kubectl's output
through the proxy compared with its output against the apiserver itself.
"""
import re
import signal
import tempfile
import time
import unittest

import clients
import harness


class Scenarios:
    """Client scenarios that must pass against any faithful API endpoint."""

    apiserver_args = ()  # extra flags for the test apiserver

    def endpoint(self):
        raise NotImplementedError

    def setUp(self):
        self.processes = harness.Processes()
        self.addCleanup(self.processes.stop_all)
        self.workdir = tempfile.mkdtemp()
        self.apiserver = clients.start_apiserver(self.processes, "--sample-data", "--bookmark-interval", "1",
                                                 *self.apiserver_args)
        self.upstream_url = "http://127.0.0.1:%d" % self.apiserver.port
        self.url = self.endpoint()
        self.kubectl = clients.Kubectl(self.url, self.workdir)

    def test_kubectl_get_apply_logs_exec_delete(self):
        out = self.kubectl.run("get", "pods", "-A").stdout
        self.assertRegex(out, r"NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE")  # N3 Table columns
        self.assertIn("web-0", out)
        manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: v1\n"
        self.assertIn("configmap/applied created", self.kubectl.run("apply", "-f", "-", stdin=manifest).stdout)
        self.assertIn("configmap/applied configured",
                      self.kubectl.run("apply", "-f", "-", stdin=manifest.replace("k: v1", "k: v2")).stdout)
        self.assertEqual(self.kubectl.run("get", "cm", "applied", "-o", "jsonpath={.data.k}").stdout, "v2")
        self.assertTrue(self.kubectl.run("logs", "web-0").stdout.strip())
        self.assertEqual(self.kubectl.run("exec", "web-0", "--", "echo", "hi").stdout.strip(), "hi")
        self.assertIn('"kind":"PodList"', self.kubectl.run("get", "--raw", "/api/v1/pods").stdout.replace(" ", ""))
        self.assertIn("deleted", self.kubectl.run("delete", "cm", "applied").stdout)
        self.assertEqual(self.kubectl.run("get", "cm", "applied", check=False).returncode, 1)

    def test_kubectl_get_watch_sees_a_new_pod(self):
        watch = self.kubectl.popen("get", "pods", "-w", "--output-watch-events", "-o", "name")
        self.addCleanup(watch.kill)
        lines = []

        def reader():
            for line in watch.stdout:
                lines.append(line.strip())
        import threading
        threading.Thread(target=reader, daemon=True).start()
        harness.wait_for(lambda: "pod/web-0" in lines, timeout=20, message="initial list in kubectl get -w")
        clients.request(self.upstream_url + "/api/v1/namespaces/default/pods", "POST", clients.pod("watched"))
        harness.wait_for(lambda: any(l.endswith("pod/watched") for l in lines), timeout=20, message="ADDED pod/watched")

    def test_kubectl_logs_follow_streams_lines(self):
        follow = self.kubectl.popen("logs", "-f", "web-0")
        self.addCleanup(follow.kill)
        first = follow.stdout.readline()
        second = follow.stdout.readline()
        self.assertTrue(first and second)

    def test_node_informer_ends_equal_to_upstream_truth(self):
        informer = clients.node_informer(self.url)
        self.addCleanup(informer.stop)
        informer.wait_event(lambda e: e.get("event") == "started")
        clients.ensure_namespace(self.upstream_url, "node-informer")
        clients.random_changes(self.upstream_url, "node-informer", 60, seed=2)
        clients.wait_equal(informer, self.upstream_url)

    def test_python_watch_with_bookmarks_ends_equal_to_upstream_truth(self):
        informer = clients.python_informer(self.url)
        self.addCleanup(informer.stop)
        informer.wait_event(lambda e: e.get("event") == "listed")
        clients.ensure_namespace(self.upstream_url, "py-informer")
        clients.random_changes(self.upstream_url, "py-informer", 60, seed=3)
        clients.wait_equal(informer, self.upstream_url)
        # W7: a bookmark is only sent once the watch cache's RV moved past the watcher's
        # last event: a write to another resource moves the cluster's revision, and a
        # consistent LIST of pods brings the pods cache to it (the apiserver's etcd
        # progress request), as in kube-apiserver.
        clients.request(self.upstream_url + "/api/v1/namespaces/default/configmaps", "POST",
                        {"metadata": {"name": "advance-rv"}})
        clients.request(self.upstream_url + "/api/v1/pods")
        informer.wait_event(lambda e: e.get("event") == "bookmark", timeout=10)


class DirectClientsTest(Scenarios, unittest.TestCase):
    """Issue acceptance: the scenarios pass against the test apiserver itself."""

    def endpoint(self):
        return "http://127.0.0.1:%d" % self.apiserver.port


class ProxyClientsTest(Scenarios, unittest.TestCase):
    """The same scenarios through kube-cache-proxy."""

    def endpoint(self):
        # kubectl exec through the proxy needs --reject-paths narrowed: a sidecar refuses
        # exec and attach by default, as kubectl proxy does (docs/security.md, sidecar mode).
        self.proxy = self.processes.proxy("http://127.0.0.1:%d" % self.apiserver.port, "--reject-paths=")
        return "http://127.0.0.1:%d" % self.proxy.port


AGE = re.compile(r"(?<![\w-])(\d+(s|m|h|d|y)(\d+(s|m|h))?|<unknown>)(?![\w-])")


TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def normalized(text):
    """kubectl output with server-computed ages and the test apiserver's log-line
    timestamps masked (they tick between two runs)."""
    return AGE.sub("AGE", TIMESTAMP.sub("TIMESTAMP", text))


class KubectlParityTest(unittest.TestCase):
    """kubectl through the proxy prints exactly what it prints against the apiserver."""

    def test_kubectl_output_is_identical_through_the_proxy(self):
        processes = harness.Processes()
        self.addCleanup(processes.stop_all)
        workdir = tempfile.mkdtemp()
        apiserver = clients.start_apiserver(processes, "--sample-data")
        # With the informer manager built in, the reads kubectl makes are served from the cache.
        proxy = processes.proxy("http://127.0.0.1:%d" % apiserver.port,
                                "--cache", "pods,configmaps,namespaces,deployments.apps,widgets.example.com")
        direct = clients.Kubectl("http://127.0.0.1:%d" % apiserver.port, workdir)
        proxied = clients.Kubectl("http://127.0.0.1:%d" % proxy.port, workdir)
        commands = [
            ["get", "pods", "-A"], ["get", "pods", "-A", "-o", "wide"], ["get", "all", "-A"],
            ["get", "namespaces"], ["get", "configmaps", "-A", "-o", "json"], ["get", "deployments", "-o", "yaml"],
            ["get", "widgets", "-A"], ["get", "pods", "-l", "app=web", "-A"],
            ["get", "pods", "-A", "--field-selector", "spec.nodeName=node-1"], ["get", "pods", "--chunk-size", "1", "-A"],
            ["get", "--raw", "/api/v1/namespaces/default/pods/web-0"], ["get", "--raw", "/version"],
            ["get", "pods", "nope"], ["get", "pods", "-l", "a b"], ["logs", "web-0"], ["api-resources"],
        ]
        for args in commands:
            with self.subTest(args=" ".join(args)):
                a = direct.run(*args, check=False)
                b = proxied.run(*args, check=False)
                self.assertEqual(b.returncode, a.returncode)
                self.assertEqual(normalized(b.stdout), normalized(a.stdout))
                self.assertEqual(normalized(b.stderr), normalized(a.stderr))


if __name__ == "__main__":
    unittest.main()
