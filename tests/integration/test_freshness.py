"""Freshness for idle resources (issue #15): reads and watches that need a newer revision
than the cache's own RV are answered from memory once a shared probe proves the cache
fresh, never with older data than the request allows.

The upstream sends bookmarks once a minute (kube-apiserver's rate), so the cached
configmaps' RV does not move while only secrets are written: every request below carries
a revision the configmaps' store has never seen. Contract clauses: C1 (RV unset reads are
consistent), R3 (NotOlderThan), R7 (an RV the cache has not reached), W4 (RV unset watch:
current state, then changes), W9 (watch-list and its initial-events-end bookmark).
"""
import http.client
import json
import re
import threading
import unittest

import clients
import harness

NS = "fresh"
CMS = "/api/v1/namespaces/%s/configmaps" % NS
PROBES = re.compile(r'^kube_cache_proxy_freshness_probes_total\{([^}]*)\} (\S+)$')


class Connection:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method, path, body=None):
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()

    def close(self):
        self.conn.close()


class Watch:
    """One raw watch; events are read on a thread into `events`."""

    def __init__(self, port, path):
        self.events = []
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.conn.request("GET", path, headers={"Accept": "application/json"})
        self.response = self.conn.getresponse()
        self.served_by = self.response.getheader("X-Kube-Cache-Proxy", "")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            while True:
                line = self.response.readline()
                if not line:
                    return
                if line.strip():
                    self.events.append(json.loads(line))
        except Exception:  # noqa: BLE001 - closed under the reader by close()
            return

    def close(self):
        try:
            self.conn.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()


def start_idle_cluster(cls, configmaps, *proxy_args):
    """The test apiserver with kube-apiserver's once-a-minute bookmarks, `configmaps` idle
    configmaps in NS, and a proxy caching configmaps and secrets."""
    cls.processes = harness.Processes()
    cls.addClassCleanup(cls.processes.stop_all)
    cls.api = clients.start_apiserver(cls.processes, "--enable-control", "--bookmark-interval", "60")
    cls.base = "http://%s:%d" % (cls.api.host, cls.api.port)
    clients.ensure_namespace(cls.base, NS)
    for i in range(configmaps):
        status, body = clients.request(cls.base + CMS, "POST",
                                       json.dumps({"metadata": {"name": "cm-%d" % i}, "data": {"v": "0"}}).encode())
        assert status == 201, body
    cls.proxy = cls.processes.proxy(cls.base, "--cache", "configmaps,secrets", "--cache-on-demand=false", *proxy_args)
    harness.wait_for(lambda: harness.http_get(cls.proxy.host, cls.proxy.port, "/readyz")[0] == 200, timeout=30,
                     message="/readyz 200")


class FreshnessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_idle_cluster(cls, 3)

    def setUp(self):
        self.c = Connection(self.proxy.port)
        self.addCleanup(self.c.close)

    def write_secret(self):
        """A write elsewhere in the cluster: returns the revision it got."""
        status, body = clients.request(self.base + "/api/v1/namespaces/%s/secrets" % NS, "POST",
                                       json.dumps({"metadata": {"generateName": "s-"}}).encode())
        self.assertEqual(status, 201, body)
        return int(json.loads(body)["metadata"]["resourceVersion"])

    def upstream_names(self):
        status, body = clients.request(self.base + CMS)
        self.assertEqual(status, 200, body)
        return sorted(i["metadata"]["name"] for i in json.loads(body)["items"])

    def probes(self):
        status, _, body = harness.http_get(self.proxy.host, self.proxy.port, "/metrics")
        self.assertEqual(status, 200)
        out = {}
        for line in body.decode().splitlines():
            m = PROBES.match(line)
            if m:
                labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
                if labels["resource"] == "configmaps":
                    out[labels["outcome"]] = float(m.group(2))
        return out

    def test_reads_at_another_resources_revision_come_from_memory(self):
        """R3/R7/C1: GET and LIST at a secret write's RV, and RV-unset, of idle configmaps."""
        want = self.upstream_names()
        for _ in range(10):
            n = self.write_secret()
            for path in ("%s/cm-1?resourceVersion=%d" % (CMS, n),
                         "%s?resourceVersion=%d" % (CMS, n),
                         "%s?resourceVersion=%d&resourceVersionMatch=NotOlderThan" % (CMS, n),
                         "%s/cm-1" % CMS,
                         CMS):
                status, headers, body = self.c.call("GET", path)
                self.assertEqual(status, 200, (path, body))
                self.assertTrue(headers.get("X-Kube-Cache-Proxy", "").startswith("cache"), (path, headers))
                doc = json.loads(body)
                if "items" in doc:
                    # The list says it is at least as new as the revision asked for (R3, C1).
                    self.assertGreaterEqual(int(doc["metadata"]["resourceVersion"]), n, path)
                    self.assertEqual(sorted(i["metadata"]["name"] for i in doc["items"]), want, path)
        self.assertGreater(self.probes().get("metadata", 0), 0)

    def test_a_write_to_the_resource_is_never_missed(self):
        """C1: a consistent read right after a write to the idle resource itself shows it."""
        for i in range(10):
            name = "new-%d" % i
            status, body = clients.request(self.base + CMS, "POST",
                                           json.dumps({"metadata": {"name": name}, "data": {"v": "1"}}).encode())
            self.assertEqual(status, 201, body)
            status, _, body = self.c.call("GET", "%s/%s" % (CMS, name))
            self.assertEqual(status, 200, body)
            status, _, body = self.c.call("GET", CMS)
            self.assertIn(name, [it["metadata"]["name"] for it in json.loads(body)["items"]])
            status, body = clients.request(self.base + "%s/%s" % (CMS, name), "DELETE")
            self.assertEqual(status, 200, body)
            status, _, body = self.c.call("GET", "%s/%s" % (CMS, name))
            self.assertEqual(status, 404, body)

    def test_rv_unset_watches_share_the_one_upstream_watch(self):
        """W4: each watch gets the current objects, then every live event once; one upstream watch."""
        self.write_secret()
        before = clients.counters(self.base)["openWatches"].get("configmaps", 0)
        watches = [Watch(self.proxy.port, "/api/v1/namespaces/%s/configmaps?watch=true" % NS) for _ in range(20)]
        for w in watches:
            self.addCleanup(w.close)
        want = self.upstream_names()
        for w in watches:
            self.assertTrue(w.served_by.startswith("cache"), w.served_by)
            harness.wait_for(lambda: len(w.events) >= len(want), timeout=10, message="initial state")
            self.assertEqual(sorted(e["object"]["metadata"]["name"] for e in w.events), want)
            self.assertTrue(all(e["type"] == "ADDED" for e in w.events))
        self.assertEqual(clients.counters(self.base)["openWatches"].get("configmaps", 0), before)
        status, body = clients.request(self.base + CMS, "POST",
                                       json.dumps({"metadata": {"name": "live"}, "data": {"v": "1"}}).encode())
        self.assertEqual(status, 201, body)
        self.addCleanup(clients.request, self.base + CMS + "/live", "DELETE")
        for w in watches:
            harness.wait_for(lambda: any(e["object"]["metadata"]["name"] == "live" for e in w.events), timeout=10,
                             message="live event")
            self.assertEqual([e["type"] for e in w.events if e["object"]["metadata"]["name"] == "live"], ["ADDED"])

    def test_bookmarks_carry_the_proven_revision(self):
        """W7: once a probe proved the idle configmaps current at a newer revision, a watch's
        bookmark (here the one 2 s before its deadline) carries that revision."""
        n = self.write_secret()
        status, _, body = self.c.call("GET", CMS)  # a consistent read: proves the namespace at >= n
        self.assertEqual(status, 200, body)
        w = Watch(self.proxy.port, "%s?watch=true&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=4" % CMS)
        self.addCleanup(w.close)
        def pre_deadline():
            return next((e for e in w.events if e["type"] == "BOOKMARK" and "k8s.io/initial-events-end" not in
                         e["object"]["metadata"].get("annotations", {})), None)
        bookmark = harness.wait_for(pre_deadline, timeout=10, message="pre-deadline bookmark")
        self.assertGreaterEqual(int(bookmark["object"]["metadata"]["resourceVersion"]), n)

    def test_watch_list_ends_at_or_past_the_revision_it_needs(self):
        """W9: initial state from memory; the initial-events-end bookmark at >= the revision of a
        write made before the request, and the state it closes is the upstream's at that RV."""
        n = self.write_secret()
        w = Watch(self.proxy.port, "%s?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
                                   "&resourceVersionMatch=NotOlderThan" % CMS)
        self.addCleanup(w.close)
        self.assertTrue(w.served_by.startswith("cache"), w.served_by)

        def end():
            return next((e for e in w.events if e["type"] == "BOOKMARK" and
                         e["object"]["metadata"].get("annotations", {}).get("k8s.io/initial-events-end") == "true"),
                        None)
        bookmark = harness.wait_for(end, timeout=10, message="initial-events-end bookmark")
        rv = int(bookmark["object"]["metadata"]["resourceVersion"])
        self.assertGreaterEqual(rv, n)
        initial = sorted(e["object"]["metadata"]["name"] for e in w.events[:w.events.index(bookmark)])
        # client-go's consistency detector: an Exact LIST at the bookmark's RV, upstream and
        # through the proxy (which answers it from memory: the state it proved at that RV).
        exact = "%s?resourceVersion=%d&resourceVersionMatch=Exact" % (CMS, rv)
        status, body = clients.request(self.base + exact)
        self.assertEqual(status, 200, body)
        self.assertEqual(sorted(i["metadata"]["name"] for i in json.loads(body)["items"]), initial)
        status, headers, body = self.c.call("GET", exact)
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["metadata"]["resourceVersion"], str(rv))
        self.assertEqual(sorted(i["metadata"]["name"] for i in json.loads(body)["items"]), initial)
        self.assertTrue(headers.get("X-Kube-Cache-Proxy", "").startswith("cache"), headers)


class LargeIdleScopeTest(unittest.TestCase):
    """C1 for a scope over 1,000 objects that does not move (idle configmaps while the
    cluster writes elsewhere): a consistent LIST is proven by the scope's metadata, which
    costs the upstream a tenth of the list it saves; a consistent GET there is not worth a
    proof of 1,500 objects and passes through."""

    @classmethod
    def setUpClass(cls):
        start_idle_cluster(cls, 0)
        # Bulk-loaded objects of one resource (a control endpoint, not 1,500 POSTs).
        status, body = clients.request(cls.base + "/control/load?resource=configmaps&count=1500&namespaces=1", "POST")
        assert status == 200, body

    def test_C1_a_consistent_list_of_a_large_idle_scope_comes_from_memory(self):
        c = Connection(self.proxy.port)
        self.addCleanup(c.close)
        want = sorted(i["metadata"]["name"] for i in json.loads(clients.request(self.base + "/api/v1/configmaps")[1])["items"])
        self.assertGreater(len(want), 1000)
        for _ in range(3):
            FreshnessTest.write_secret(self)  # the cluster moves elsewhere; configmaps stay idle
            status, headers, body = c.call("GET", "/api/v1/configmaps")
            self.assertEqual(status, 200)
            self.assertTrue(headers.get("X-Kube-Cache-Proxy", "").startswith("cache"), headers)
            self.assertEqual(sorted(i["metadata"]["name"] for i in json.loads(body)["items"]), want)
        one = want[0]
        ns = json.loads(clients.request(self.base + "/api/v1/configmaps")[1])["items"][0]["metadata"]["namespace"]
        status, headers, _ = c.call("GET", "/api/v1/namespaces/%s/configmaps/%s" % (ns, one))
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("X-Kube-Cache-Proxy"), "upstream")


class AbandonedReadsTest(unittest.TestCase):
    """Issue 34, cancellation end to end: consistent reads waiting for a probe that the
    slow upstream holds end when their clients leave (their connections released within
    1 s), while the probe itself runs on for whoever else waits; before, each held its
    connection until the probe landed."""

    @classmethod
    def setUpClass(cls):
        start_idle_cluster(cls, 3)

    def open_connections(self):
        text = harness.http_get(self.proxy.host, self.proxy.port, "/metrics")[2].decode()
        m = re.search(r"^kube_cache_proxy_open_connections (\S+)$", text, re.M)
        return int(float(m.group(1))) - 1  # less the connection asking

    def test_abandoned_consistent_reads_release_their_connections_within_1s(self):
        import socket
        import time
        baseline = self.open_connections()
        clients.request(self.base + "/control/slow?ms=4000", "POST", b"{}")
        self.addCleanup(clients.request, self.base + "/control/slow?ms=0", "POST", b"{}")
        readers = []
        for i in range(20):
            s = socket.create_connection((self.proxy.host, self.proxy.port))
            s.sendall(("GET %s/cm-%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % (CMS, i % 3)).encode())
            readers.append(s)
        harness.wait_for(lambda: self.open_connections() >= baseline + 20, timeout=5,
                         message="the reads waiting for their probe")
        time.sleep(0.2)  # they are waiting on the probe the slow upstream holds
        for s in readers:
            s.close()
        harness.wait_for(lambda: self.open_connections() <= baseline, timeout=1.0, interval=0.02,
                         message="the abandoned reads' connections released")


class CachePolicyTest(unittest.TestCase):
    """--read-policy=cache: RV-unset reads from memory at once, with their staleness bound;
    with --write-sync a client still reads its own writes through the proxy."""

    @classmethod
    def setUpClass(cls):
        start_idle_cluster(cls, 0, "--read-policy", "cache", "--write-sync")

    def test_rv_unset_reads_come_from_memory_with_a_staleness_bound(self):
        c = Connection(self.proxy.port)
        self.addCleanup(c.close)
        for i in range(20):
            # Writes through the proxy: --write-sync holds each answer until the cache has it.
            status, _, body = c.call("POST", CMS, {"metadata": {"name": "own-%d" % i}, "data": {"v": "1"}})
            self.assertEqual(status, 201, body)
            status, headers, body = c.call("GET", "%s/own-%d" % (CMS, i))
            self.assertEqual(status, 200, body)
            self.assertTrue(headers.get("X-Kube-Cache-Proxy", "").startswith("cache"), headers)
            staleness = float(headers["X-Kube-Cache-Proxy-Staleness"])
            self.assertGreaterEqual(staleness, 0.0)
            self.assertLess(staleness, 30.0)  # the write's own event came a moment ago
            status, headers, body = c.call("GET", CMS)
            self.assertIn("X-Kube-Cache-Proxy-Staleness", headers)
            self.assertIn("own-%d" % i, [it["metadata"]["name"] for it in json.loads(body)["items"]])
        # RV=N reads keep the strict rule: no staleness header, never older than N.
        status, body = clients.request(self.base + "/api/v1/namespaces/%s/secrets" % NS, "POST",
                                       json.dumps({"metadata": {"generateName": "s-"}}).encode())
        n = int(json.loads(body)["metadata"]["resourceVersion"])
        status, headers, body = c.call("GET", "%s?resourceVersion=%d" % (CMS, n))
        self.assertEqual(status, 200, body)
        self.assertNotIn("X-Kube-Cache-Proxy-Staleness", headers)
        self.assertGreaterEqual(int(json.loads(body)["metadata"]["resourceVersion"]), n)
        # No probe was needed for any RV-unset read.
        status, _, body = harness.http_get(self.proxy.host, self.proxy.port, "/metrics")
        probes = sum(float(line.split()[-1]) for line in body.decode().splitlines()
                     if line.startswith("kube_cache_proxy_freshness_probes_total") and 'resource="configmaps"' in line)
        self.assertLessEqual(probes, 1)


if __name__ == "__main__":
    unittest.main()
