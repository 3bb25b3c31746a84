"""/debug/status (issue 19): one row per cached resource with its state, objects, bytes, RV
and watchers, as JSON for `kubectl get --raw` and as a self-refreshing HTML page; the JSON's
objects and bytes per resource agree with /metrics.

kube-cache-proxy --cache pods,configmaps in front of kube-test-apiserver --sample-data.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import clients
import harness

CACHED = ("pods", "configmaps")


def metric_samples(text, family):
    """{resource: value} of a per-resource cache family (cluster-wide JSON informers)."""
    out = {}
    for m in re.finditer(r'^%s\{resource="([^"]*)",version="v1",namespace="",encoding="json"\} (\S+)$' % family,
                         text, re.M):
        out[m.group(1)] = float(m.group(2))
    return out


class StatusPageTest(unittest.TestCase):
    def setUp(self):
        self.processes = harness.Processes()
        self.addCleanup(self.processes.stop_all)
        self.api = clients.start_apiserver(self.processes, "--sample-data")
        self.proxy = self.processes.proxy("http://127.0.0.1:%d" % self.api.port, "--cache", ",".join(CACHED))
        harness.wait_for(lambda: harness.http_get("127.0.0.1", self.proxy.port, "/readyz")[0] == 200, timeout=20,
                         message="proxy ready")

    def status(self):
        code, headers, body = harness.http_get("127.0.0.1", self.proxy.port, "/debug/status",
                                               {"Accept": "application/json"})
        self.assertEqual(code, 200)
        self.assertEqual(headers.get("Content-Type"), "application/json")
        return json.loads(body)

    def test_json_rows_agree_with_metrics(self):
        for _ in range(3):
            harness.http_get("127.0.0.1", self.proxy.port, "/api/v1/pods?resourceVersion=0")
        harness.http_get("127.0.0.1", self.proxy.port, "/api/v1/pods?resourceVersion=0&limit=1&continue=bogus")
        # A read is counted once its answer is written, which can be just after the client
        # has it: wait for all four before two snapshots taken moments apart are compared.
        harness.wait_for(lambda: {r["resource"]: r for r in self.status()["resources"]}["pods"]["readsFromCache"] >= 4,
                         timeout=10, message="the four pod reads counted")
        status = self.status()
        self.assertTrue(status["upstream"]["up"])
        rows = {r["resource"]: r for r in status["resources"]}
        self.assertEqual(sorted(rows), sorted(CACHED))
        metrics = harness.http_get("127.0.0.1", self.proxy.port, "/metrics")[2].decode()
        objects = metric_samples(metrics, "kube_cache_proxy_cache_objects")
        json_bytes = metric_samples(metrics, "kube_cache_proxy_cache_json_bytes")
        overhead = metric_samples(metrics, "kube_cache_proxy_cache_overhead_bytes")
        rvs = metric_samples(metrics, "kube_cache_proxy_cache_resource_version")
        for name in CACHED:
            with self.subTest(resource=name):
                row = rows[name]
                self.assertEqual(row["state"], "synced")
                self.assertGreater(row["objects"], 0)
                self.assertEqual(row["objects"], objects[name])
                self.assertEqual(row["jsonBytes"], json_bytes[name])
                self.assertEqual(row["overheadBytes"], overhead[name])
                self.assertEqual(row["resourceVersion"], rvs[name])
                self.assertGreater(row["lastSyncTimestamp"], 0)
                served = {"cache": 0.0, "upstream": 0.0}
                for labels, value in re.findall(r"^kube_cache_proxy_requests_total\{(.*)\} (\S+)$", metrics, re.M):
                    labels = dict(re.findall(r'(\w+)="([^"]*)"', labels))
                    if labels["resource"] == name and labels["verb"] in ("get", "list", "watch") and \
                            labels["served_by"] in served:
                        served[labels["served_by"]] += float(value)
                self.assertEqual((row["readsFromCache"], row["readsPassedThrough"]),
                                 (served["cache"], served["upstream"]))
        self.assertGreaterEqual(rows["pods"]["readsFromCache"], 3)

    def test_resources_not_cached_say_why(self):
        proxy = self.processes.proxy("http://127.0.0.1:%d" % self.api.port, "--cache", "pods",
                                     "--no-cache", "deployments.apps")
        harness.wait_for(lambda: harness.http_get("127.0.0.1", proxy.port, "/readyz")[0] == 200, timeout=20,
                         message="second proxy ready")

        def not_cached():
            body = harness.http_get("127.0.0.1", proxy.port, "/debug/status", {"Accept": "application/json"})[2]
            return {r["resource"]: r["reason"] for r in json.loads(body)["notCached"]}
        reasons = not_cached()
        self.assertNotIn("pods", reasons)
        self.assertEqual(reasons["deployments.apps"], "on the deny list (--no-cache)")
        self.assertEqual(reasons["nodes"], "not read yet: cached on its first read")
        # A read caches it on demand; then it is a row of its own.
        harness.http_get("127.0.0.1", proxy.port, "/api/v1/nodes")
        harness.wait_for(lambda: "nodes" not in not_cached(), timeout=20, message="nodes cached on demand")
        page = harness.http_get("127.0.0.1", proxy.port, "/debug/status")[2].decode()
        self.assertIn('<tr class="not-cached"><td>deployments.apps</td><td>v1</td><td>on the deny list (--no-cache)</td>',
                      page)

    def test_a_long_sync_shows_its_progress(self):
        """Issue 19: while 50,000 pods sync, the row says how far it has got."""
        api = clients.start_apiserver(self.processes, "--enable-control")
        base = "http://127.0.0.1:%d" % api.port
        clients.control(base, "/control/load?resource=pods&count=50000&namespaces=100")
        proxy = self.processes.proxy(base, "--cache", "pods")
        seen = []

        def synced():
            body = harness.http_get("127.0.0.1", proxy.port, "/debug/status", {"Accept": "application/json"})[2]
            rows = [r for r in json.loads(body)["resources"] if r["resource"] == "pods"]
            if rows and rows[0]["state"] == "syncing" and rows[0]["sync"]:
                seen.append(rows[0]["sync"])
            return rows and rows[0]["state"] == "synced" and rows[0]
        row = harness.wait_for(synced, timeout=120, interval=0.02, message="pods synced")
        self.assertEqual(row["objects"], 50000)
        self.assertIsNone(row["sync"])
        moving = [s for s in seen if 0 < s["objects"] < 50000]
        self.assertTrue(moving, "no progress seen while syncing: %s" % seen[:3])
        self.assertGreater(moving[-1]["bytes"], 0)
        self.assertGreaterEqual(moving[-1]["objects"], moving[0]["objects"])
        print("sync progress samples: %d, e.g. %s" % (len(moving), moving[len(moving) // 2]))

    def test_watchers_are_counted(self):
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=10)
        conn.request("GET", "/api/v1/pods?watch=true&resourceVersion=0")
        self.assertEqual(conn.getresponse().status, 200)
        try:
            harness.wait_for(lambda: {r["resource"]: r["watchers"] for r in self.status()["resources"]}["pods"] == 1,
                             timeout=10, message="one pods watcher")
        finally:
            conn.close()

    def assert_rows(self, page):
        rows = re.findall(r'<tr class="resource" data-state="([^"]+)"><td>([^<]+)</td>', page)
        self.assertEqual(sorted(name for _, name in rows), sorted(CACHED), page)
        self.assertEqual({state for state, _ in rows}, {"synced"})

    def test_html_page_has_a_row_per_cached_resource(self):
        code, headers, body = harness.http_get("127.0.0.1", self.proxy.port, "/debug/status", {"Accept": "text/html"})
        self.assertEqual(code, 200)
        self.assertEqual(headers.get("Content-Type"), "text/html; charset=utf-8")
        self.assert_rows(body.decode())

    def test_chromium_renders_the_rows_and_refreshes_them(self):
        """Headless Chromium (Debian's package, installed by scripts/install-deps.sh) loads the
        page; with 12 s of virtual time its script has redrawn the rows from the JSON twice."""
        chromium = shutil.which("chromium")
        self.assertIsNotNone(chromium, "chromium is not installed: run scripts/install-deps.sh")
        profile = tempfile.mkdtemp(prefix="status-chromium-")
        self.addCleanup(shutil.rmtree, profile, ignore_errors=True)
        out = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile,
                              "--virtual-time-budget=12000", "--dump-dom",
                              "http://127.0.0.1:%d/debug/status" % self.proxy.port],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        self.assert_rows(out.stdout)
        refreshed = re.search(r'id="resources" data-refreshed="(\d+)"', out.stdout)
        self.assertIsNotNone(refreshed, out.stdout)
        self.assertGreaterEqual(int(refreshed.group(1)), 2, out.stdout)
        self.assertIn("Upstream: up", out.stdout)

    def test_kubectl_get_raw_reads_it(self):
        kubectl = clients.kubectl_binary()
        out = subprocess.run([kubectl, "--server", "http://127.0.0.1:%d" % self.proxy.port, "get", "--raw",
                              "/debug/status"], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(sorted(r["resource"] for r in json.loads(out.stdout)["resources"]), sorted(CACHED))


if __name__ == "__main__":
    unittest.main()
