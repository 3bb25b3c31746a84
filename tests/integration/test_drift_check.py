"""Drift detection (issue #7, acceptance 4): the test apiserver changes a pod without
emitting its event (/control/silent-update), so the proxy's cache silently diverges. With
--drift-check-interval the proxy compares its cache with the upstream's listing at the
cache's resourceVersion (resourceVersionMatch=Exact, contract R3; PartialObjectMetadataList,
N4), finds the difference, counts it and relists; the relist's diff reaches downstream
watchers as a MODIFIED event (W4), and the proxy's GET then equals the upstream's.
"""
import http.client
import json
import queue
import socket
import threading
import time
import unittest

import clients
import harness
from test_informers import metrics


class Watch:
    """A downstream WATCH through the proxy; events land in a queue."""

    def __init__(self, host, port, path):
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.conn.request("GET", path)
        self.sock = self.conn.sock
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.status
        self.events = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.response:
                if line.strip():
                    self.events.put(json.loads(line))
        except (OSError, ValueError, http.client.HTTPException):
            pass

    def wait_for(self, predicate, timeout=20):
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("no matching watch event")
            try:
                event = self.events.get(timeout=remaining)
            except queue.Empty:
                raise AssertionError("no matching watch event")
            if predicate(event):
                return event

    def close(self):
        # The reader thread is blocked in a read: end the stream under it first.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()


class DriftCheckTest(unittest.TestCase):
    def setUp(self):
        self.processes = harness.Processes()
        self.addCleanup(self.processes.stop_all)
        self.api = clients.start_apiserver(self.processes, "--enable-control", "--bookmark-interval", "1")
        self.base = "http://127.0.0.1:%d" % self.api.port
        clients.ensure_namespace(self.base, "drift")
        for name in ("a", "b", "c"):
            status, body = clients.request(self.base + "/api/v1/namespaces/drift/pods", "POST", clients.pod(name))
            self.assertEqual(status, 201, body)

    def test_silent_update_is_found_and_repaired(self):
        proxy = self.processes.proxy(self.base, "--cache", "pods", "--cache-on-demand=false",
                                     "--drift-check-interval", "300ms")
        harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/readyz")[0] == 200, timeout=20,
                         message="proxy ready")
        # Before any divergence the checks find nothing.
        harness.wait_for(lambda: metrics(proxy)[("kube_cache_proxy_cache_drift_checks_total", "pods")] >= 2,
                         timeout=20, message="two drift checks")
        self.assertEqual(metrics(proxy)[("kube_cache_proxy_cache_drifts_total", "pods")], 0)
        self.assertGreater(metrics(proxy)[("kube_cache_proxy_cache_drift_last_check_timestamp_seconds", "pods")], 0)

        status, _, body = harness.http_get(proxy.host, proxy.port, "/api/v1/namespaces/drift/pods?resourceVersion=0")
        self.assertEqual(status, 200, body)
        watch = Watch(proxy.host, proxy.port, "/api/v1/namespaces/drift/pods?watch=1&resourceVersion=%s"
                      % json.loads(body)["metadata"]["resourceVersion"])
        self.addCleanup(watch.close)

        status, body = clients.request(self.base + "/control/silent-update?resource=pods&namespace=drift&name=b",
                                       "POST", b"")
        self.assertEqual(status, 200, body)
        status, body = clients.request(self.base + "/api/v1/namespaces/drift/pods/b")
        upstream_b = json.loads(body)
        silent_rv = upstream_b["metadata"]["resourceVersion"]

        event = watch.wait_for(lambda e: e["type"] == "MODIFIED" and e["object"]["metadata"]["name"] == "b")
        self.assertEqual(event["object"]["metadata"]["resourceVersion"], silent_rv)
        self.assertIn("kube-test-apiserver/silent-update", event["object"]["metadata"]["annotations"])

        status, headers, body = harness.http_get(proxy.host, proxy.port,
                                                 "/api/v1/namespaces/drift/pods/b?resourceVersion=0")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body), upstream_b)
        m = metrics(proxy)
        self.assertGreaterEqual(m[("kube_cache_proxy_cache_drifts_total", "pods")], 1)
        self.assertIn("drift at resourceVersion", proxy.stderr())
        self.assertIn("drift/b", proxy.stderr())


if __name__ == "__main__":
    unittest.main()
