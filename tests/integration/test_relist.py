"""Relists and bookmarks of cached watches (issue 33, contract W5, W6, W7, W11) against
kube-test-apiserver, whose /control/restart loses its watch history as a kube-apiserver
restart does: the proxy's resumed watch gets 410 and it relists.

A relist that changed the cache ends the downstream watches from before it (their RVs
never repeat) and answers resumes from before its RV with 410, so a client relists from
the proxy's memory instead of missing what happened while the proxy could not watch; a
relist that changed nothing ends none. Busy watches get bookmarks on schedule. The same
against kube-apiserver 1.37.2: tests/realcluster/test_real_relist.py.

Drift detection (issue #7, acceptance 4) relists too: the test apiserver changes a pod
without emitting its event (/control/silent-update), so the proxy's cache silently
diverges. With --drift-check-interval the proxy compares its cache with the upstream's
listing at the cache's resourceVersion (resourceVersionMatch=Exact, contract R3;
PartialObjectMetadataList, N4), finds the difference, counts it and relists; the client of
a watch from before gets the repaired object by its own relist, and the proxy's GET then
equals the upstream's.
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
from test_cached_watch import CachedWatchFixture, create_pod
from test_informers import metrics
from watch_streams import types


class RelistTest(CachedWatchFixture, unittest.TestCase):
    def test_w7_a_busy_watch_gets_bookmarks_on_schedule_whatever_the_traffic(self):
        """Issue 33: a bookmark every --watch-bookmark-interval (500 ms here) and 2 s before
        timeoutSeconds, busy or not, at the newest RV the stream was sent everything up to
        (before, a stream that always had events queued got none)."""
        self.sync_proxy()
        rv = json.loads(clients.request(self.upstream + "/api/v1/pods")[1])["metadata"]["resourceVersion"]
        s = self.watch(self.proxy.port, "/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=4"
                                        "&resourceVersion=" + rv)
        clients.control(self.upstream, "/control/churn?rate=200&seconds=4")
        s.wait_end(timeout=10)
        ev = s.snapshot()
        events = [int(e["object"]["metadata"]["resourceVersion"]) for e in ev if e["type"] != "BOOKMARK"]
        self.assertGreater(len(events), 200)
        self.assertEqual(events, sorted(set(events)))
        last = int(rv)
        bookmarks = 0
        for e in ev:
            at = int(e["object"]["metadata"]["resourceVersion"])
            if e["type"] == "BOOKMARK":
                bookmarks += 1
                self.assertGreaterEqual(at, last)
            last = max(last, at)
        self.assertGreaterEqual(bookmarks, 5)

    def pods_cache_rv(self):
        """The RV of the proxy's JSON pod cache (/metrics)."""
        metrics = harness.http_get("127.0.0.1", self.proxy.port, "/metrics")[2].decode()
        return max(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                   if line.startswith("kube_cache_proxy_cache_resource_version{") and 'resource="pods"' in line
                   and 'encoding="json"' in line)

    def relist_after_restart(self, writes):
        """An apiserver restart (/control/restart: watches cut, resumes from before it 410)
        with `writes` made before the proxy relists: the upstream answers slowly meanwhile,
        so the proxy's re-watch (410) and then its relist come after them. Returns once the
        proxy relisted (its cache reached the restart's RV, which only a list brings)."""
        clients.control(self.upstream, "/control/slow?ms=400")
        self.addCleanup(clients.control, self.upstream, "/control/slow?ms=0")
        restarted = int(clients.control(self.upstream, "/control/restart?seconds=0")["restartResourceVersion"])
        writes()
        clients.control(self.upstream, "/control/slow?ms=0")
        harness.wait_for(lambda: self.pods_cache_rv() >= restarted, timeout=20, message="the proxy relisted")
        self.assertEqual(clients.truth("http://127.0.0.1:%d" % self.proxy.port, "/api/v1/pods?resourceVersion=0"),
                         clients.truth(self.upstream))

    def test_w5_w6_w11_a_relist_that_changed_the_cache_ends_streams_and_resumes_across_it_get_410(self):
        """Issue 33: pods deleted while the proxy could not watch reach it as a relist's
        differences, at RVs nobody saw. Instead of DELETED events that all carry the list's
        RV (a client resuming after the first would miss the rest for good), the streams
        from before end (W6) and a resume from any RV before the list is 410 (W5), so the
        client relists from the proxy's memory, as from a kube-apiserver that rebuilt its cache."""
        clients.ensure_namespace(self.upstream, "gap")
        for i in range(10):
            create_pod(self.upstream, "gap", "doomed-%d" % i, {"doomed": "yes"})
        self.sync_proxy()
        rv = json.loads(clients.request(self.upstream + "/api/v1/pods")[1])["metadata"]["resourceVersion"]
        streams = [self.watch(self.proxy.port, "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv),
                   self.watch(self.proxy.port, "/api/v1/namespaces/a/pods?watch=1&resourceVersion=" + rv)]

        def gap():
            status, body = clients.request(self.upstream + "/api/v1/namespaces/gap/pods?labelSelector=doomed%3Dyes",
                                           "DELETE")
            self.assertEqual(status, 200, body)
            create_pod(self.upstream, "gap", "born-in-the-gap")
        self.relist_after_restart(gap)
        doomed = lambda ev: [e for e in ev if "doomed" in e["object"]["metadata"]["name"]]  # noqa: E731
        for s in streams:
            harness.wait_for(lambda: s.ended or doomed(s.snapshot()), timeout=10, message="the stream's end")
            events = [e for e in s.snapshot() if e["type"] != "BOOKMARK"]
            rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
            self.assertEqual(rvs, sorted(set(rvs)), "W11: RVs strictly increase")
            self.assertEqual(doomed(events), [])
            s.wait_end(timeout=10)
            self.assertTrue(s.ended)  # a clean end: the terminating chunk
        last = max([int(rv)] + [int(e["object"]["metadata"]["resourceVersion"]) for e in streams[0].snapshot()])
        resumed = self.watch(self.proxy.port, "/api/v1/pods?watch=1&resourceVersion=%d" % last)
        resumed.wait_end()
        status = resumed.snapshot()[0]["object"]
        self.assertEqual((status["code"], status["reason"]), (410, "Expired"))
        self.assertTrue(status["message"].startswith("too old resource version: %d (" % last), status["message"])
        # The client's relist (K1: RV=last, NotOlderThan) from memory, then a watch from it.
        status_code, body = clients.request("http://127.0.0.1:%d/api/v1/pods?resourceVersion=%d" % (self.proxy.port, last))
        self.assertEqual(status_code, 200)
        listed = json.loads(body)
        self.assertNotIn("doomed-0", [o["metadata"]["name"] for o in listed["items"]])
        after = self.watch(self.proxy.port, "/api/v1/pods?watch=1&resourceVersion=" + listed["metadata"]["resourceVersion"])
        create_pod(self.upstream, "gap", "after-relist")
        after.wait(lambda ev: any(e["object"]["metadata"]["name"] == "after-relist" for e in ev), timeout=20)
        self.assertIn(b'kube_cache_proxy_cache_watchers_ended_by_relist_total{resource="pods"',
                      harness.http_get("127.0.0.1", self.proxy.port, "/metrics")[2])

    def test_w6_a_relist_that_changed_nothing_leaves_streams_open(self):
        self.sync_proxy()
        rv = json.loads(clients.request(self.upstream + "/api/v1/pods")[1])["metadata"]["resourceVersion"]
        s = self.watch(self.proxy.port, "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv)
        self.relist_after_restart(lambda: None)
        create_pod(self.upstream, "b", "after-relist")
        s.wait(lambda ev: any(e["object"]["metadata"].get("name") == "after-relist" for e in ev), timeout=20)
        self.assertNotIn("ERROR", types(s.snapshot()))
        self.assertFalse(s.ended)



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
            self.events.put({"type": "END"})  # the stream's clean end
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
        listed_rv = json.loads(body)["metadata"]["resourceVersion"]
        watch = Watch(proxy.host, proxy.port, "/api/v1/namespaces/drift/pods?watch=1&resourceVersion=" + listed_rv)
        self.addCleanup(watch.close)

        status, body = clients.request(self.base + "/control/silent-update?resource=pods&namespace=drift&name=b",
                                       "POST", b"")
        self.assertEqual(status, 200, body)
        status, body = clients.request(self.base + "/api/v1/namespaces/drift/pods/b")
        upstream_b = json.loads(body)
        silent_rv = upstream_b["metadata"]["resourceVersion"]

        # No event could carry the change at its RV: the stream ends, a resume is 410.
        self.assertEqual(watch.wait_for(lambda e: e["type"] != "BOOKMARK")["type"], "END")
        resumed = Watch(proxy.host, proxy.port, "/api/v1/namespaces/drift/pods?watch=1&resourceVersion=" + listed_rv)
        self.addCleanup(resumed.close)
        error = resumed.wait_for(lambda e: e["type"] != "BOOKMARK")
        self.assertEqual((error["type"], error["object"]["code"]), ("ERROR", 410))
        status, _, body = harness.http_get(proxy.host, proxy.port,
                                           "/api/v1/namespaces/drift/pods?resourceVersion=" + listed_rv)
        relisted = {o["metadata"]["name"]: o for o in json.loads(body)["items"]}
        self.assertEqual(relisted["b"]["metadata"]["resourceVersion"], silent_rv)
        self.assertIn("kube-test-apiserver/silent-update", relisted["b"]["metadata"]["annotations"])

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
