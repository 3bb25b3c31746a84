#!/usr/bin/python3
"""Integration smoke test of kube-test-apiserver over real HTTP and with kubectl.

Starts the binary from $KCP_BIN_DIR on a free port and checks contract clauses
(kube-api-contract.md IDs in the test names) plus the kubectl flows the demo uses.
Standard library only; run with /usr/bin/python3.
"""
import base64
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
WATCH_CLIENTS = int(os.environ.get("KTA_WATCH_CLIENTS", "1000"))

from smoke_support import Server, ServerTest, make_configmap, make_namespace, wait_for  # noqa: E402
from smoke_streams import *  # noqa: E402,F401,F403  (W2 WebSocket, W9 gzip, restart)


class ContractTest(ServerTest):
    def test_R7_future_resource_version_waits_then_504_with_retry_after(self):
        _, lst = self.srv.json("GET", "/api/v1/namespaces/default/pods", expect=200)
        future = int(lst["metadata"]["resourceVersion"]) + 1000
        start = time.monotonic()
        resp, data = self.srv.request("GET", "/api/v1/namespaces/default/pods/web-0?resourceVersion=%d" % future)
        elapsed = time.monotonic() - start
        self.assertEqual(resp.status, 504)
        self.assertEqual(resp.getheader("Retry-After"), "1")
        st = json.loads(data)
        self.assertEqual(st["reason"], "Timeout")
        self.assertTrue(st["message"].startswith("Timeout: Too large resource version: %d, current: " % future))
        self.assertEqual(st["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")
        self.assertGreater(elapsed, 2.5)

    def test_P1_P2_P4_pages_share_one_resource_version_and_tokens_have_the_apiserver_format(self):
        make_namespace(self.srv, "paging")
        for i in range(5):
            make_configmap(self.srv, "paging", "cm-%d" % i)
        path = "/api/v1/namespaces/paging/configmaps?limit=2"
        _, page = self.srv.json("GET", path, expect=200)
        rv = page["metadata"]["resourceVersion"]
        token = page["metadata"]["continue"]
        decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        self.assertEqual(decoded, {"v": "meta.k8s.io/v1", "rv": int(rv), "start": "/cm-1\u0000"})
        self.assertEqual(page["metadata"]["remainingItemCount"], 3)
        names = [i["metadata"]["name"] for i in page["items"]]
        make_configmap(self.srv, "paging", "cm-9")  # not visible: pages are one snapshot (P1)
        while "continue" in page["metadata"]:
            _, page = self.srv.json("GET", path + "&continue=" + urllib.parse.quote(page["metadata"]["continue"]), expect=200)
            self.assertEqual(page["metadata"]["resourceVersion"], rv)
            names += [i["metadata"]["name"] for i in page["items"]]
        self.assertEqual(names, ["cm-%d" % i for i in range(5)])
        self.assertNotIn("remainingItemCount", page["metadata"])

    def test_P5_resource_version_0_ignores_limit(self):
        _, page = self.srv.json("GET", "/api/v1/pods?limit=1&resourceVersion=0", expect=200)
        self.assertGreater(len(page["items"]), 1)
        self.assertNotIn("continue", page["metadata"])

    def test_L1_built_in_items_omit_kind_and_custom_resources_keep_it(self):
        _, pods = self.srv.json("GET", "/api/v1/namespaces/default/pods", expect=200)
        self.assertEqual(pods["kind"], "PodList")
        self.assertNotIn("kind", pods["items"][0])
        _, widgets = self.srv.json("GET", "/apis/example.com/v1/namespaces/default/widgets", expect=200)
        self.assertEqual(widgets["items"][0]["kind"], "Widget")
        _, empty = self.srv.json("GET", "/api/v1/namespaces/kube-public/pods", expect=200)
        self.assertEqual(empty["items"], [])

    def test_W9_watch_list_ends_initial_events_with_the_annotated_bookmark(self):
        conn, resp = self.srv.open_watch("/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true"
                                         "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
        self.assertEqual(resp.status, 200)
        added = 0
        while True:
            ev = json.loads(resp.readline())
            if ev["type"] == "ADDED":
                added += 1
                continue
            self.assertEqual(ev["type"], "BOOKMARK")
            meta = ev["object"]["metadata"]
            self.assertEqual(meta["annotations"], {"k8s.io/initial-events-end": "true"})
            self.assertEqual(ev["object"]["kind"], "Pod")
            self.assertEqual(ev["object"]["spec"], {"containers": None})
            break
        conn.close()
        self.assertEqual(added, 3)

    def test_W5_too_old_resource_version_is_an_ERROR_event_in_a_200_stream(self):
        _, lst = self.srv.json("GET", "/api/v1/configmaps", expect=200)
        old = int(lst["metadata"]["resourceVersion"])
        make_configmap(self.srv, "default", "w5-%d" % old)
        self.srv.json("POST", "/control/compact", expect=200)
        conn, resp = self.srv.open_watch("/api/v1/configmaps?watch=1&resourceVersion=%d" % old)
        self.assertEqual(resp.status, 200)
        ev = json.loads(resp.readline())
        self.assertEqual(ev["type"], "ERROR")
        self.assertEqual(ev["object"]["code"], 410)
        self.assertEqual(ev["object"]["reason"], "Expired")
        self.assertRegex(ev["object"]["message"], r"^too old resource version: %d \(\d+\)$" % old)
        self.assertEqual(resp.read(), b"")  # the stream closes after the ERROR
        conn.close()

    def test_W3_W10_watch_sees_modify_and_delete_with_the_deletion_resource_version(self):
        cm = make_configmap(self.srv, "default", "w10")
        conn, resp = self.srv.open_watch("/api/v1/namespaces/default/configmaps?watch=1&labelSelector=app%%3Dweb"
                                         "&resourceVersion=%s" % cm["metadata"]["resourceVersion"])
        self.srv.json("PATCH", "/api/v1/namespaces/default/configmaps/w10", '{"metadata":{"labels":{"app":"web"}}}',
                      {"Content-Type": "application/merge-patch+json"}, expect=200)
        ev = json.loads(resp.readline())
        self.assertEqual(ev["type"], "ADDED")  # entered the selector (W10)
        _, deleted = self.srv.json("DELETE", "/api/v1/namespaces/default/configmaps/w10", expect=200)
        ev = json.loads(resp.readline())
        self.assertEqual(ev["type"], "DELETED")
        self.assertGreater(int(ev["object"]["metadata"]["resourceVersion"]),
                           int(cm["metadata"]["resourceVersion"]) + 1)
        conn.close()

    def test_X2_update_with_a_stale_resource_version_is_409_Conflict(self):
        cm = make_configmap(self.srv, "default", "x2")
        cm["data"] = {"k": "v2"}
        self.srv.json("PUT", "/api/v1/namespaces/default/configmaps/x2", cm, expect=200)
        cm["data"] = {"k": "v3"}
        status, st = self.srv.json("PUT", "/api/v1/namespaces/default/configmaps/x2", cm)
        self.assertEqual(status, 409)
        self.assertEqual(st["reason"], "Conflict")
        self.assertEqual(st["message"], 'Operation cannot be fulfilled on configmaps "x2": the object has been '
                                        'modified; please apply your changes to the latest version and try again')
        status, st = self.srv.json("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "x2"}})
        self.assertEqual((status, st["reason"]), (409, "AlreadyExists"))

    def test_X3_dry_run_persists_nothing(self):
        status, _ = self.srv.json("POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
                                  {"metadata": {"name": "dry"}})
        self.assertEqual(status, 201)
        status, st = self.srv.json("GET", "/api/v1/namespaces/default/configmaps/dry")
        self.assertEqual(status, 404)
        self.assertEqual(st["message"], 'configmaps "dry" not found')  # R10

    def test_N1_unmatchable_accept_is_406(self):
        resp, data = self.srv.request("GET", "/api/v1/pods", headers={"Accept": "text/html"})
        self.assertEqual(resp.status, 406)
        self.assertEqual(json.loads(data)["message"], "only the following media types are accepted: "
                         "application/json, application/yaml, application/vnd.kubernetes.protobuf")

    def test_creating_into_a_missing_namespace_is_404(self):
        status, st = self.srv.json("POST", "/api/v1/namespaces/nope/configmaps", {"metadata": {"name": "a"}})
        self.assertEqual(status, 404)
        self.assertEqual(st["message"], 'namespaces "nope" not found')


class KubectlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server("--sample-data")
        cls.tmp = tempfile.mkdtemp(prefix="kta-smoke-")
        cls.kubeconfig = os.path.join(cls.tmp, "kubeconfig")
        with open(cls.kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster: {server: 'http://%s:%d'}\n"
                    "users:\n- name: u\n  user: {token: x}\ncontexts:\n- name: c\n  context: {cluster: t, user: u, "
                    "namespace: default}\ncurrent-context: c\n" % (cls.srv.host, cls.srv.port))
        cls.env = dict(os.environ, HOME=cls.tmp)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def kubectl(self, *args, timeout=60, stdin=None):
        p = subprocess.run([KUBECTL, "--kubeconfig=" + self.kubeconfig, *args], capture_output=True, text=True,
                           timeout=timeout, env=self.env, input=stdin)
        self.assertEqual(p.returncode, 0, "kubectl %s failed: %s%s" % (" ".join(args), p.stdout, p.stderr))
        return p.stdout

    def test_kubectl_get_lists_pods_of_all_namespaces(self):
        out = self.kubectl("get", "pods", "-A")
        self.assertIn("web-0", out)
        self.assertIn("api-2", out)

    def test_kubectl_get_raw(self):
        out = json.loads(self.kubectl("get", "--raw", "/api/v1/namespaces/default/pods"))
        self.assertEqual(out["kind"], "PodList")

    def test_kubectl_get_watch_prints_new_objects(self):
        p = subprocess.Popen([KUBECTL, "--kubeconfig=" + self.kubeconfig, "get", "configmaps", "-w"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
        try:
            wait_for(lambda: self.srv.json("GET", "/control/counters")[1]["openWatches"].get("configmaps", 0) > 0,
                     20, "kubectl's watch")
            make_configmap(self.srv, "default", "watched-by-kubectl")
            line = ""
            deadline = time.monotonic() + 20
            while "watched-by-kubectl" not in line and time.monotonic() < deadline:
                line = p.stdout.readline()
            self.assertIn("watched-by-kubectl", line)
        finally:
            p.terminate()
            p.wait(timeout=10)
            p.stdout.close()
            p.stderr.close()

    def test_kubectl_apply_creates_then_updates_and_delete_removes(self):
        manifest = os.path.join(self.tmp, "cm.yaml")
        for value in ("one", "two"):
            with open(manifest, "w") as f:
                f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  key: %s\n" % value)
            self.kubectl("apply", "-f", manifest)
            _, cm = self.srv.json("GET", "/api/v1/namespaces/default/configmaps/applied", expect=200)
            self.assertEqual(cm["data"]["key"], value)
        self.kubectl("delete", "-f", manifest)
        status, _ = self.srv.json("GET", "/api/v1/namespaces/default/configmaps/applied")
        self.assertEqual(status, 404)

    def test_kubectl_apply_custom_resource(self):
        manifest = os.path.join(self.tmp, "widget.yaml")
        with open(manifest, "w") as f:
            f.write("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: applied\nspec:\n  color: green\n")
        self.kubectl("apply", "-f", manifest)
        self.kubectl("apply", "-f", manifest)
        self.assertIn("applied", self.kubectl("get", "widgets"))

    def test_kubectl_apply_server_side(self):
        manifest = os.path.join(self.tmp, "ssa.yaml")
        with open(manifest, "w") as f:
            f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  key: one\n")
        self.kubectl("apply", "--server-side", "-f", manifest)
        _, cm = self.srv.json("GET", "/api/v1/namespaces/default/configmaps/ssa", expect=200)
        self.assertEqual(cm["data"]["key"], "one")

    def test_kubectl_get_prints_server_side_table_columns(self):
        header = self.kubectl("get", "pods").splitlines()[0].split()
        self.assertEqual(header[:2], ["NAME", "READY"])

    def test_kubectl_logs(self):
        self.assertIn("log line 1", self.kubectl("logs", "web-0"))

    def test_kubectl_exec_echo(self):
        self.assertEqual(self.kubectl("exec", "web-0", "--", "echo", "hi").strip(), "hi")


class LifecycleTest(unittest.TestCase):
    def test_sigterm_stops_the_server_cleanly_even_with_open_watches(self):
        srv = Server()
        conn, resp = srv.open_watch("/api/v1/pods?watch=1")
        os.kill(srv.proc.pid, signal.SIGTERM)
        self.assertEqual(srv.proc.wait(timeout=10), 0)
        conn.close()
        srv.stop()

    def test_bearer_token_is_required_when_configured(self):
        srv = Server("--token", "t0k")
        try:
            resp, data = srv.request("GET", "/api/v1/pods")
            self.assertEqual(resp.status, 401)
            resp, _ = srv.request("GET", "/api/v1/pods", headers={"Authorization": "Bearer t0k"})
            self.assertEqual(resp.status, 200)
        finally:
            srv.stop()


class ScaleTest(ServerTest):
    """Measurements: 10,000-pod LIST and many concurrent watches."""
    SERVER_ARGS = ()

    def test_list_of_10000_pods_is_fast(self):
        _, res = self.srv.json("POST", "/control/load?resource=pods&count=10000&namespaces=10&nodes=20", expect=200)
        start = time.monotonic()
        resp, data = self.srv.request("GET", "/api/v1/pods", headers={"Accept-Encoding": "identity"})
        elapsed = time.monotonic() - start
        self.assertEqual(resp.status, 200)
        items = json.loads(data)["items"]
        self.assertEqual(len(items), 10000)
        print("\nLIST 10000 pods: %.1f MB in %.3f s (load took %.1f s)" % (len(data) / 1e6, elapsed, res["seconds"]),
              file=sys.stderr)
        self.assertLess(elapsed, 5.0)

    def test_concurrent_watches_all_receive_a_new_object(self):
        make_namespace(self.srv, "fanout")
        sel = selectors.DefaultSelector()
        socks = []
        start = time.monotonic()
        req = ("GET /api/v1/namespaces/fanout/configmaps?watch=1&resourceVersion=%s HTTP/1.1\r\nHost: x\r\n"
               "Accept: application/json\r\n\r\n")
        rv = self.srv.json("GET", "/api/v1/namespaces/fanout/configmaps", expect=200)[1]["metadata"]["resourceVersion"]
        for _ in range(WATCH_CLIENTS):
            s = socket.create_connection((self.srv.host, self.srv.port))
            s.sendall((req % rv).encode())
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, bytearray())
            socks.append(s)
        wait_for(lambda: self.srv.json("GET", "/control/counters")[1]["openWatches"].get("configmaps", 0)
                 >= WATCH_CLIENTS, 60, "all watches to register")
        connected = time.monotonic() - start
        t0 = time.monotonic()
        make_configmap(self.srv, "fanout", "fanout-target")
        pending = set(socks)
        deadline = time.monotonic() + 60
        while pending and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                chunk = key.fileobj.recv(65536)
                key.data.extend(chunk)
                if b"fanout-target" in key.data and key.fileobj in pending:
                    pending.discard(key.fileobj)
        delivered = time.monotonic() - t0
        for s in socks:
            sel.unregister(s)
            s.close()
        print("\n%d watches: connected in %.2f s, event delivered to all in %.3f s" %
              (WATCH_CLIENTS, connected, delivered), file=sys.stderr)
        self.assertEqual(len(pending), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
