"""kubectl (built with the control plane, same version) through the proxy prints what it
prints talking to the real kube-apiserver directly: version, get in every output format,
errors, api-resources, explain, -w, apply (client- and server-side), delete and wait.
Contract clauses: R1-R3 (reads), N1-N4 (negotiation: Table for kubectl get), S1-S4
(selectors), W1 (watch).
"""
import json
import os
import time
import unittest

import realcluster
from realcluster import Kubectl

import harness

CACHED = "pods,configmaps,namespaces,deployments.apps,widgets.example.com"


@realcluster.require_bin
class KubectlThroughProxyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        realcluster.start_plane(cls, "kubectl-real-", class_level=True)
        cls.proxy = realcluster.start_proxy(cls.processes, cls.plane, "--cache", CACHED)
        cls.direct = Kubectl(cls.plane.kubeconfig("admin"), cls.workdir)
        cls.via = Kubectl(realcluster.proxy_kubeconfig(cls.workdir, cls.proxy.port), cls.workdir)

    def same(self, *args, stdin=None):
        """Runs kubectl both ways; the output, errors and exit code must be equal. AGE columns
        tick between the two runs, so a difference is retried a few times."""
        for _ in range(3):
            d = self.direct.run(*args, stdin=stdin, check=False)
            p = self.via.run(*args, stdin=stdin, check=False)
            if (d.returncode, d.stdout, d.stderr) == (p.returncode, p.stdout, p.stderr):
                return p
            time.sleep(0.3)
        self.assertEqual((d.returncode, d.stdout, d.stderr), (p.returncode, p.stdout, p.stderr),
                         "kubectl %s differs through the proxy" % " ".join(args))

    def test_version_shows_the_real_server(self):
        import json
        p = self.via.run("version", "-o", "json")
        server = json.loads(p.stdout)["serverVersion"]
        self.assertTrue(server["gitVersion"].startswith("v1.3"), server)
        self.assertGreaterEqual(int(server["minor"]), 36, server)
        self.same("version", "-o", "json")

    def test_get_in_every_output_format_matches(self):
        outputs = [[], ["-o", "wide"], ["-o", "json"], ["-o", "yaml"], ["-o", "name"], ["--show-labels"],
                   ["-o", "jsonpath={.items[*].metadata.name}"],
                   ["-o", "custom-columns=NAME:.metadata.name,RV:.metadata.resourceVersion"]]
        for resource in (["pods", "-A"], ["pods", "-n", "demo"], ["configmaps"], ["namespaces"], ["deployments", "-A"],
                         ["widgets"], ["wd", "-o", "wide"]):
            for out in outputs:
                with self.subTest(resource=resource, output=out):
                    self.same("get", *resource, *out)
        self.same("get", "pod", "web-1", "-o", "yaml")
        self.same("get", "namespace", "demo", "-o", "json")
        self.same("get", "widget", "widget-0")

    def test_selectors_and_errors_match(self):
        self.same("get", "pods", "-A", "-l", "app=app-1")
        self.same("get", "pods", "-A", "-l", "app in (app-0,app-2),tier=backend", "-o", "name")
        self.same("get", "pods", "-A", "--field-selector", "spec.nodeName=node-1")
        self.same("get", "widgets", "--field-selector", "spec.color=blue")
        self.same("get", "pods", "-A", "--field-selector", "spec.unknown=x")       # 400, S3
        self.same("get", "pods", "-l", "a b c")                                     # 400, S1
        self.same("get", "pod", "does-not-exist")                                   # 404
        self.same("get", "configmaps", "-n", "no-such-namespace")                   # empty list
        self.same("get", "pods", "--chunk-size", "1", "-A")                         # pagination, P1-P4
        self.same("get", "pods", "-A", "--raw", "/api/v1/pods?limit=2")

    def test_discovery_and_explain_match(self):
        self.same("api-resources")
        self.same("api-resources", "--api-group", "example.com", "-o", "wide")
        self.same("api-versions")
        self.same("explain", "pods.spec.containers.ports")
        self.same("explain", "widgets.spec")

    def both_answers(self, path):
        """GET `path` from the apiserver and through the proxy: (apiserver answer, (status, body))."""
        import http.client
        want = self.plane.request(path, headers={"User-Agent": "test"})
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
        try:
            conn.request("GET", path, headers={"User-Agent": "test"})
            r = conn.getresponse()
            return want, (r.status, r.read())
        finally:
            conn.close()

    def test_watch_requests_answer_as_the_apiserver(self):
        """Watch option handling the emulators once disagreed on (W1, W4, W9, E4): errors
        byte for byte, and a stream's first event."""
        queries = ["watch=1&resourceVersion=abc", "watch=1&timeoutSeconds=abc", "watch=1&resourceVersion=-1",
                   "watch=1&resourceVersionMatch=Exact&resourceVersion=5",
                   "watch=1&sendInitialEvents=true&resourceVersion=abc&resourceVersionMatch=NotOlderThan",
                   "watch=1&sendInitialEvents=true&timeoutSeconds=1",
                   "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
                   "watch=1&allowWatchBookmarks=maybe&timeoutSeconds=1&resourceVersion=0",
                   "watch=yes&timeoutSeconds=1&resourceVersion=0", "watch=1&labelSelector=a+b",
                   "watch=1&fieldSelector=spec.unknown%3Dx"]
        for q in queries:
            path = "/api/v1/namespaces/default/pods?" + q
            want, got = self.both_answers(path)
            with self.subTest(query=q):
                self.assertEqual(got[0], want.status)
                if want.status != 200:
                    self.assertEqual(got[1], want.body)
                else:
                    self.assertEqual(got[1].split(b"\n", 1)[0], want.body.split(b"\n", 1)[0])

    def test_encoded_paths_answer_as_the_apiserver(self):
        """%-escapes in the path (R1, R10): the apiserver reads Go's decoded path, and its
        registry refuses a name that is no path segment with 400 before any lookup."""
        paths = ["/api/v1/namespaces/default/pods/web%2D0", "/api/v1/namespaces/def%61ult/pods/web-0",
                 "/api/v1/namespaces/default/pods/web%2F0", "/api/v1/namespaces/default/pods/a%25b",
                 "/api/v1/namespaces/default/pods/%2E%2E", "/api/v1/namespaces/default/pods/a%25b/status",
                 "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dweb%5C%2C0"]
        for path in paths:
            path += ("&" if "?" in path else "?") + "resourceVersion=0"
            want, got = self.both_answers(path)
            with self.subTest(path=path):
                self.assertEqual(got[0], want.status)
                if want.status != 200:
                    self.assertEqual(got[1], want.body)
                else:
                    def summary(body):
                        o = json.loads(body)
                        return o["kind"], o["metadata"].get("name"), [i["metadata"]["name"] for i in o.get("items", [])]
                    self.assertEqual(summary(got[1]), summary(want.body))

    def test_apply_watch_wait_and_delete_through_the_proxy(self):
        manifest = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: default\n"
                    "data:\n  k: v1\n")
        watcher_direct = self.direct.popen("get", "configmaps", "-w", "-o", "name")
        watcher_proxy = self.via.popen("get", "configmaps", "-w", "-o", "name")
        deleter = None
        direct_lines, proxy_lines = realcluster.LineReader(watcher_direct), realcluster.LineReader(watcher_proxy)
        try:
            # kubectl lists, prints the list, then watches from the list's RV: every change
            # made after both printed their lists reaches both.
            initial = ["configmap/configmap-0", "configmap/configmap-1"]
            for reader in (direct_lines, proxy_lines):
                harness.wait_for(lambda: reader.lines[:2] == initial, timeout=30, message=lambda: reader.lines)
            self.assertIn("created", self.via.run("apply", "-f", "-", stdin=manifest).stdout)
            self.assertEqual(self.direct.run("get", "cm", "applied", "-o", "jsonpath={.data.k}").stdout, "v1")
            ssa = manifest.replace("k: v1", "k: v2")
            self.assertIn("serverside-applied", self.via.run("apply", "--server-side", "-f", "-", stdin=ssa).stdout)
            self.same("get", "cm", "applied", "-o", "yaml")
            self.via.run("wait", "--for=jsonpath={.data.k}=v2", "cm/applied", "--timeout=30s")
            self.direct.run("patch", "cm", "applied", "-p", '{"data":{"k":"v3"}}')
            self.via.run("wait", "--for=jsonpath={.data.k}=v3", "cm/applied", "--timeout=30s")
            deleter = self.via.popen("wait", "--for=delete", "cm/applied", "--timeout=30s")
            self.assertIn("deleted", self.via.run("delete", "cm", "applied").stdout)
            self.assertEqual(deleter.wait(40), 0)
            # Every change is a line on both (kubectl prints the object, not the event type);
            # the direct watch sets what the proxied one must print.
            harness.wait_for(lambda: len(direct_lines.lines) >= len(initial) + 4, timeout=30,
                             message=lambda: "direct watch printed %s" % direct_lines.lines)
            harness.wait_for(lambda: proxy_lines.lines == direct_lines.lines, timeout=30,
                             message=lambda: "proxy watch printed %s, direct %s" % (proxy_lines.lines,
                                                                                    direct_lines.lines))
        finally:
            for w in (watcher_direct, watcher_proxy, deleter):
                if w is not None:
                    w.kill()
                    w.communicate()


if __name__ == "__main__":
    unittest.main()
