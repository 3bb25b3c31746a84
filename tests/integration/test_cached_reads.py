"""GET and LIST answered from the cache equal the upstream's answers at the same
resourceVersion (R2, R3, P1-P9, S1-S6, L1, N1, N4), say so in X-Kube-Cache-Proxy, and
cost the upstream nothing (fence reads for consistent reads excepted).

kube-cache-proxy --cache pods,configmaps,widgets.example.com in front of
kube-test-apiserver --enable-control --sample-data.
"""
import gzip
import http.client
import json
import os
import re
import socket
import time
import unittest
import urllib.parse

import clients
import harness

CACHED = "pods,configmaps,widgets.example.com"
METADATA_LIST_ACCEPT = ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")


def start_caching_proxy(processes, upstream_url, cache):
    """kube-cache-proxy --cache: the informer manager caches exactly these resources."""
    return processes.proxy(upstream_url, "--cache", cache)


def get(port, path, headers=None):
    """(status, headers with lower-case names, body bytes, decompressed)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        h = {"User-Agent": "cached-reads-test"}
        h.update(headers or {})
        conn.request("GET", path, headers=h)
        r = conn.getresponse()
        raw = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        body = gzip.decompress(raw) if hdrs.get("content-encoding") == "gzip" else raw
        return r.status, hdrs, body
    finally:
        conn.close()


def served_by(headers):
    return headers.get("x-kube-cache-proxy", "").split(";")[0]


def cache_rv(headers):
    value = headers.get("x-kube-cache-proxy", "")
    return int(value.split("rv=")[1]) if "rv=" in value else None


class CachedReadsTest(unittest.TestCase):
    def setUp(self):
        self.processes = harness.Processes()
        self.addCleanup(self.processes.stop_all)
        self.api = clients.start_apiserver(self.processes, "--enable-control", "--sample-data",
                                           "--bookmark-interval", "1")
        self.base = "http://127.0.0.1:%d" % self.api.port
        self.proxy = start_caching_proxy(self.processes, self.base, CACHED)
        self.pp = self.proxy.port
        for path in ("/api/v1/pods", "/api/v1/configmaps", "/apis/example.com/v1/widgets"):
            harness.wait_for(lambda: served_by(get(self.pp, path + "?resourceVersion=0")[1]) == "cache",
                             timeout=20, message="cache serving " + path)

    def both(self, path, headers=None):
        return get(self.pp, path, headers), get(self.api.port, path, headers)

    def counters(self):
        return json.loads(clients.request(self.base + "/control/counters")[1])["requests"]

    def settled_rv(self, path="/api/v1/pods"):
        """A list RV the cache has reached: the proxy's own RV=0 answer."""
        status, headers, body = get(self.pp, path + "?resourceVersion=0")
        self.assertEqual(status, 200)
        return json.loads(body)["metadata"]["resourceVersion"]

    def assert_same(self, path, headers=None):
        (ps, ph, pb), (us, uh, ub) = self.both(path, headers)
        self.assertEqual(served_by(ph), "cache", path)
        # Byte for byte, down to the newline Go's encoder ends every body with.
        self.assertEqual((ps, pb.decode()), (us, ub.decode()), path)
        self.assertEqual(ph.get("content-type"), uh.get("content-type"), path)
        return json.loads(pb) if pb else None

    def test_exact_reads_and_pages_equal_the_upstream_byte_for_byte(self):
        rv = self.settled_rv()
        for ns in ("", "/namespaces/default"):
            coll = "/api/v1%s/pods" % ns
            self.assert_same("%s?resourceVersion=%s&resourceVersionMatch=Exact" % (coll, rv))
            # Legacy limit+RV=N is Exact (R3); pages chain through identical tokens (P1, P2, P4).
            page = self.assert_same("%s?limit=2&resourceVersion=%s" % (coll, rv))
            while page["metadata"].get("continue"):
                token = urllib.parse.quote(page["metadata"]["continue"])
                page = self.assert_same("%s?limit=2&continue=%s" % (coll, token))
        for query in ("labelSelector=app%3Dweb", "labelSelector=app+notin+(web)", "fieldSelector=spec.nodeName%3Dnode-1",
                      "fieldSelector=metadata.name%3Dweb-0", "labelSelector=app&fieldSelector=status.phase!%3DFailed"):
            self.assert_same("/api/v1/pods?resourceVersion=%s&resourceVersionMatch=Exact&%s" % (rv, query))
            self.assert_same("/api/v1/pods?limit=1&resourceVersion=%s&%s" % (rv, query))
        # A selector pinning the namespace narrows the scanned range: no token on its last page (P6).
        page = self.assert_same("/api/v1/pods?limit=1&resourceVersion=%s&fieldSelector=metadata.namespace%%3Ddefault" % rv)
        while page["metadata"].get("continue"):
            token = urllib.parse.quote(page["metadata"]["continue"])
            page = self.assert_same("/api/v1/pods?limit=1&fieldSelector=metadata.namespace%%3Ddefault&continue=%s" % token)
        cm_rv = self.settled_rv("/api/v1/configmaps")
        self.assert_same("/api/v1/configmaps?resourceVersion=%s&resourceVersionMatch=Exact" % cm_rv)
        w_rv = self.settled_rv("/apis/example.com/v1/widgets")
        self.assert_same("/apis/example.com/v1/widgets?resourceVersion=%s&resourceVersionMatch=Exact" % w_rv)
        self.assert_same("/api/v1/pods?resourceVersion=%s&resourceVersionMatch=Exact" % rv,
                         {"Accept": METADATA_LIST_ACCEPT})

    def test_rv0_and_get_answers_equal_the_upstream_items(self):
        (ps, ph, pb), (us, uh, ub) = self.both("/api/v1/pods?limit=1&resourceVersion=0")
        self.assertEqual((ps, us), (200, 200))
        self.assertEqual(served_by(ph), "cache")
        p, u = json.loads(pb), json.loads(ub)
        self.assertNotIn("continue", p["metadata"])  # P5
        self.assertEqual(p["items"], u["items"])
        self.assertEqual((p["kind"], p["apiVersion"]), ("PodList", "v1"))
        self.assert_same("/api/v1/namespaces/default/pods/web-0?resourceVersion=0")
        self.assert_same("/api/v1/namespaces/default/pods/nope?resourceVersion=0")  # R10
        self.assert_same("/api/v1/namespaces/default/pods/web-0?resourceVersion=0",
                         {"Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"})
        widgets = json.loads(get(self.pp, "/apis/example.com/v1/widgets?resourceVersion=0")[2])
        self.assertTrue(all("kind" in item for item in widgets["items"]))  # L1: CR items keep TypeMeta

    def test_a_large_object_read_by_a_slow_client_is_written_whole(self):
        # An answer is first sent with what the socket takes at once; what does not fit
        # waits for the client under the write timeout. Both parts together must be the
        # upstream's answer (R2), and the connection must stay usable after it.
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "default"},
              "data": {"blob-%d" % i: ("%d" % i) * 100_000 for i in range(20)}}
        status, _ = clients.request(self.base + "/api/v1/namespaces/default/configmaps", "POST", cm)
        self.assertEqual(status, 201)
        path = "/api/v1/namespaces/default/configmaps/big?resourceVersion=0"
        harness.wait_for(lambda: get(self.pp, path)[0] == 200, timeout=20, message="the proxy has the configmap")
        _, _, upstream_body = get(self.api.port, path)
        self.assertGreater(len(upstream_body), 2_000_000)
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(30)
            s.connect(("127.0.0.1", self.pp))
            request = ("GET %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: cached-reads-test\r\n\r\n" % path).encode()
            for _ in range(2):  # the second answer shows the first left the connection clean
                s.sendall(request)
                time.sleep(0.5)  # the proxy meets a full socket and waits for room
                answer = b""
                while b"\r\n\r\n" not in answer:
                    answer += s.recv(4096)
                head, body = answer.split(b"\r\n\r\n", 1)
                length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
                while len(body) < length:
                    body += s.recv(65536)
                self.assertTrue(head.startswith(b"HTTP/1.1 200"), head[:100])
                self.assertIn(b"X-Kube-Cache-Proxy: cache", head)
                self.assertEqual(body, upstream_body)

    def test_invalid_requests_get_the_upstreams_errors_from_the_cache(self):
        for query in ("labelSelector=a+b", "labelSelector=a%3Db,", "fieldSelector=spec.bogus%3D1", "limit=abc",
                      "resourceVersionMatch=NotOlderThan", "resourceVersion=abc", "continue=bogus",
                      "resourceVersion=5&continue=" + "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTAsInN0YXJ0IjoiYVx1MDAwMCJ9",
                      "resourceVersion=0&resourceVersionMatch=Exact", "resourceVersionMatch=Foo&resourceVersion=1"):
            self.assert_same("/api/v1/pods?" + query)

    def test_encoded_paths_are_read_decoded_as_the_apiserver_reads_them(self):
        """R1/R10 with %-escapes in the path: Go hands the apiserver the decoded path, so
        pods/web%2D0 is web-0 (served from the cache), a%2Fb is pod "a", subresource "b"
        (404 no route), and a name that is no path segment is the registry's 400."""
        for path in ("/api/v1/namespaces/default/pods/web%2D0", "/api/v1/namespaces/def%61ult/pods/web-0",
                     "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Da%5C%2Cb&"):
            self.assert_same(path + "?resourceVersion=0" if "?" not in path else path + "resourceVersion=0")
        for path in ("/api/v1/namespaces/default/pods/web%2F0", "/api/v1/namespaces/default/pods/a%25b",
                     "/api/v1/namespaces/default/pods/%2E%2E", "/api/v1/namespaces/default/pods/a%25b/status"):
            (ps, ph, pb), (us, uh, ub) = self.both(path + "?resourceVersion=0")
            self.assertEqual((ps, pb), (us, ub), path)
            self.assertNotEqual(served_by(ph), "cache", path)
        self.assertEqual(self.both("/api/v1/namespaces/default/pods/a%25b")[1][0], 400)

    def test_cached_reads_cost_the_upstream_nothing(self):
        rv = self.settled_rv()
        before = self.counters()
        for _ in range(20):
            self.assertEqual(served_by(get(self.pp, "/api/v1/pods?resourceVersion=0")[1]), "cache")
            self.assertEqual(served_by(get(self.pp, "/api/v1/pods?resourceVersion=%s" % rv)[1]), "cache")
            self.assertEqual(served_by(get(self.pp, "/api/v1/namespaces/default/pods/web-0?resourceVersion=0")[1]),
                             "cache")
            self.assertEqual(served_by(get(self.pp, "/api/v1/pods?labelSelector=a+b")[1]), "cache")
        self.assertEqual(self.counters(), before)

    def test_future_rv_waits_then_answers_504_too_large(self):
        # The answer of a wait that timed out (the apiserver's 3 s), not an immediate refusal.
        status, headers, body = get(self.pp, "/api/v1/pods?resourceVersion=99999999")
        self.assertEqual(status, 504)
        self.assertEqual(headers.get("retry-after"), "1")
        s = json.loads(body)
        self.assertEqual(s["reason"], "Timeout")
        self.assertTrue(s["message"].startswith("Timeout: Too large resource version: 99999999, current: "))
        self.assertEqual(s["details"], {"causes": [{"reason": "ResourceVersionTooLarge",
                                                    "message": "Too large resource version"}],
                                        "retryAfterSeconds": 1})

    def test_expired_continue_passes_through_to_the_upstreams_410(self):
        token = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhXHUwMDAwIn0"  # rv 1, long gone
        (ps, ph, pb), (us, uh, ub) = self.both("/api/v1/pods?limit=2&continue=" + token)
        self.assertEqual(served_by(ph), "upstream")
        self.assertEqual((ps, pb), (us, ub))

    def test_large_lists_are_gzipped_like_the_upstream(self):
        clients.request(self.base + "/control/load?resource=pods&count=200&namespaces=2&nodes=3", "POST", b"")
        total = json.loads(clients.request(self.base + "/api/v1/pods")[1])["metadata"]["resourceVersion"]
        harness.wait_for(lambda: cache_rv(get(self.pp, "/api/v1/pods?resourceVersion=0")[1]) >= int(total),
                         timeout=20, message="cache at %s" % total)
        rv = self.settled_rv()
        path = "/api/v1/pods?resourceVersion=%s&resourceVersionMatch=Exact" % rv
        (ps, ph, pb), (us, uh, ub) = self.both(path, {"Accept-Encoding": "gzip"})
        self.assertEqual(served_by(ph), "cache")
        self.assertEqual(uh.get("content-encoding"), "gzip")
        # A sidecar's loopback client gets the same bytes plain: compressing them would
        # only cost CPU on both sides (the answer is valid for a client that accepts gzip).
        self.assertIsNone(ph.get("content-encoding"))
        self.assertEqual(pb, ub)
        # --gzip-loopback compresses as the apiserver does (N1), from the chunks' kept
        # runs after the first such LIST: the same body twice.
        zipping = self.processes.proxy(self.base, "--cache", CACHED, "--gzip-loopback")
        harness.wait_for(lambda: (cache_rv(get(zipping.port, "/api/v1/pods?resourceVersion=0")[1]) or 0) >= int(rv),
                         timeout=20, message="second proxy at %s" % rv)
        for _ in range(2):
            status, zh, zb = get(zipping.port, path, {"Accept-Encoding": "gzip"})
            self.assertEqual(served_by(zh), "cache")
            self.assertEqual(zh.get("content-encoding"), "gzip")
            self.assertEqual(zb, ub)
        kept = [line for line in get(zipping.port, "/metrics")[2].decode().splitlines()
                if line.startswith("kube_cache_proxy_compressed_run_bytes ")]
        self.assertEqual(len(kept), 1, kept)
        self.assertGreater(float(kept[0].split()[1]), 0)  # the runs the LISTs kept

    def test_consistent_reads_see_own_writes_and_report_the_cache_fraction(self):
        # C1: a write through the proxy, then RV-unset reads must see it, cached or not.
        pod = clients.pod("c1-probe")
        status, body = clients.request("http://127.0.0.1:%d/api/v1/namespaces/default/pods" % self.pp, "POST", pod)
        self.assertEqual(status, 201, body)
        written = int(json.loads(body)["metadata"]["resourceVersion"])
        status, headers, body = get(self.pp, "/api/v1/namespaces/default/pods/c1-probe")
        self.assertEqual(status, 200)
        self.assertGreaterEqual(int(json.loads(body)["metadata"]["resourceVersion"]), written)
        status, headers, body = get(self.pp, "/api/v1/namespaces/default/pods")
        self.assertIn("c1-probe", [i["metadata"]["name"] for i in json.loads(body)["items"]])
        self.assertGreaterEqual(int(json.loads(body)["metadata"]["resourceVersion"]), written)

        def fraction(path, n=40):
            hits = 0
            for _ in range(n):
                status, headers, _ = get(self.pp, path)
                self.assertEqual(status, 200)
                hits += served_by(headers) == "cache"
            return hits / n

        idle = fraction("/api/v1/configmaps")
        clients.request(self.base + "/control/churn?rate=50&seconds=30", "POST", b"")
        busy = fraction("/api/v1/namespaces/churn/pods")
        print("consistent reads served from cache: idle configmaps %.0f%%, busy pods %.0f%%" % (idle * 100, busy * 100))


if __name__ == "__main__":
    unittest.main()
