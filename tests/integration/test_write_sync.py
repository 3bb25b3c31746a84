"""Read-your-writes (--write-sync, issue #7 acceptance 1): with it on, a write through the
proxy is answered only once the proxy's cache shows it, so a read right after it through
the proxy (resourceVersion=0 GET or LIST, a watch from resourceVersion=0) always sees the
write, from any client. Contract clauses: R3 (RV=0 reads may be served from a cache),
W4 (a watch from RV=0 starts with the current state), E1 (Status bodies).

With it off, an RV=0 read right after a write may miss it (docs/routing.md); RV-unset
reads are consistent either way (C1), which other tests cover.
"""
import http.client
import json
import os
import re
import tempfile
import unittest

import clients
import harness

SANITIZED = os.environ.get("KCP_SANITIZED") == "1"
ROUNDS = 30 if SANITIZED else 100
HELD = re.compile(r'^kube_cache_proxy_write_sync_held_total\{([^}]*)\} (\S+)$')


class Connection:
    """One keep-alive client connection to the proxy."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method, path, body=None, content_type="application/json"):
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()

    def close(self):
        self.conn.close()


def held_metrics(proxy):
    """{(resource, outcome): count} of kube_cache_proxy_write_sync_held_total."""
    status, _, body = harness.http_get(proxy.host, proxy.port, "/metrics")
    assert status == 200, body
    out = {}
    for line in body.decode().splitlines():
        m = HELD.match(line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            out[(labels["resource"], labels["outcome"])] = float(m.group(2))
    return out


class WriteSyncTest(unittest.TestCase):
    def setUp(self):
        self.processes = harness.Processes()
        self.addCleanup(self.processes.stop_all)
        self.api = clients.start_apiserver(self.processes, "--enable-control")
        self.base = "http://%s:%d" % (self.api.host, self.api.port)
        clients.ensure_namespace(self.base, "rw")

    def start_proxy(self, *args):
        proxy = self.processes.proxy(self.base, "--cache", "pods,configmaps", "--cache-on-demand=false", *args)
        harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/readyz")[0] == 200, timeout=30,
                         message="/readyz 200")
        return proxy

    def test_rv0_reads_and_watches_see_every_write(self):
        proxy = self.start_proxy("--write-sync")
        c = Connection(proxy.port)
        self.addCleanup(c.close)
        cms = "/api/v1/namespaces/rw/configmaps"
        for i in range(ROUNDS):
            name = "cm-%d" % i
            # create -> RV=0 GET and RV=0 LIST show it (R3)
            status, headers, body = c.call("POST", cms, {"metadata": {"name": name}, "data": {"v": "0"}})
            self.assertEqual(status, 201, body)
            self.assertNotIn("Warning", headers)
            rv = json.loads(body)["metadata"]["resourceVersion"]
            status, headers, body = c.call("GET", "%s/%s?resourceVersion=0" % (cms, name))
            self.assertEqual(status, 200, "round %d: RV=0 GET after create: %s" % (i, body))
            self.assertTrue(headers.get("X-Kube-Cache-Proxy", "").startswith("cache"), headers)
            self.assertEqual(json.loads(body)["metadata"]["resourceVersion"], rv)
            status, _, body = c.call("GET", "%s?resourceVersion=0&fieldSelector=metadata.name%%3D%s" % (cms, name))
            self.assertEqual(status, 200, body)
            self.assertEqual([it["metadata"]["resourceVersion"] for it in json.loads(body)["items"]], [rv],
                             "round %d: RV=0 LIST after create" % i)
            # patch -> RV=0 GET shows the new resourceVersion
            status, _, body = c.call("PATCH", "%s/%s" % (cms, name), {"data": {"v": "1"}},
                                     "application/merge-patch+json")
            self.assertEqual(status, 200, body)
            rv = json.loads(body)["metadata"]["resourceVersion"]
            status, _, body = c.call("GET", "%s/%s?resourceVersion=0" % (cms, name))
            self.assertEqual(json.loads(body)["metadata"]["resourceVersion"], rv, "round %d: RV=0 GET after patch" % i)
            # delete -> RV=0 GET answers 404 NotFound
            status, _, body = c.call("DELETE", "%s/%s" % (cms, name))
            self.assertEqual(status, 200, body)
            status, _, body = c.call("GET", "%s/%s?resourceVersion=0" % (cms, name))
            self.assertEqual(status, 404, "round %d: RV=0 GET after delete: %s" % (i, body))
            self.assertEqual(json.loads(body)["reason"], "NotFound")

        # A watch from RV=0 begins with the current state (W4): it holds each write.
        for i in range(ROUNDS // 5):
            name = "w-%d" % i
            status, _, body = c.call("POST", "/api/v1/namespaces/rw/pods", clients.pod(name))
            self.assertEqual(status, 201, body)
            rv = json.loads(body)["metadata"]["resourceVersion"]
            w = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
            try:
                w.request("GET", "/api/v1/namespaces/rw/pods?watch=1&resourceVersion=0&timeoutSeconds=1"
                          "&fieldSelector=metadata.name%%3D%s" % name)
                r = w.getresponse()
                self.assertEqual(r.status, 200)
                first = json.loads(r.readline())
                self.assertEqual((first["type"], first["object"]["metadata"]["resourceVersion"]), ("ADDED", rv),
                                 "round %d: watch from RV=0 after create" % i)
            finally:
                w.close()

        held = held_metrics(proxy)
        self.assertGreaterEqual(held.get(("configmaps", "shown"), 0), 3 * ROUNDS)
        self.assertEqual(held.get(("configmaps", "timeout"), 0), 0)

    def test_per_resource_setting_wins_over_the_flag(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "config.yaml")
            with open(path, "w") as f:
                f.write("resources:\n  - resource: configmaps\n    write-sync: false\n")
            proxy = self.start_proxy("--write-sync", "--config", path)
            c = Connection(proxy.port)
            self.addCleanup(c.close)
            status, _, body = c.call("POST", "/api/v1/namespaces/rw/configmaps", {"metadata": {"name": "off"}})
            self.assertEqual(status, 201, body)
            status, _, body = c.call("POST", "/api/v1/namespaces/rw/pods", clients.pod("on"))
            self.assertEqual(status, 201, body)
            # Dry runs change nothing and are never held.
            status, _, body = c.call("POST", "/api/v1/namespaces/rw/pods?dryRun=All", clients.pod("dry"))
            self.assertIn(status, (200, 201), body)
            held = held_metrics(proxy)
            self.assertEqual(held.get(("pods", "shown")), 1, held)
            self.assertNotIn(("configmaps", "shown"), held)

    def test_off_by_default(self):
        proxy = self.start_proxy()
        c = Connection(proxy.port)
        self.addCleanup(c.close)
        status, _, body = c.call("POST", "/api/v1/namespaces/rw/configmaps", {"metadata": {"name": "plain"}})
        self.assertEqual(status, 201, body)
        self.assertEqual(held_metrics(proxy), {})


if __name__ == "__main__":
    unittest.main()
