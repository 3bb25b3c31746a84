"""A chain of two proxies, as deployed on a cluster: a node-local sidecar (B) whose
upstream is the cluster add-on (A), whose upstream is the apiserver.

B must find in A a faithful apiserver: the real-client scenarios of test_clients.py
pass through the chain, the apiserver sees one watch per cached resource however many
clients watch through B, and watch-list (W2, W9), bookmarks (W7), continue tokens (P2,
P3) and resourceVersions (R1) come out of B exactly as they come out of A and the
apiserver.
"""
import http.client
import json
import unittest
import urllib.parse

import clients
import harness
from test_clients import Scenarios
from watch_streams import WatchStream, types

CACHED = "pods,configmaps,namespaces"


def start_chain(processes, upstream_url, a_cache=CACHED, b_args=(), a_args=()):
    """Proxy A in front of the apiserver, then, once A is ready, proxy B in front of A; B
    caches CACHED. B starts second: a watch of B's that reached A before A's cache synced
    would pass through A to the apiserver for its whole life (a second upstream watch of
    that resource, which test_apiserver_sees_one_watch_per_cached_resource would count)."""
    a = processes.proxy(upstream_url, "--cache", a_cache, *a_args)
    harness.wait_for(lambda: harness.http_get(a.host, a.port, "/readyz")[0] == 200, timeout=20, message="proxy A ready")
    b = processes.proxy("http://127.0.0.1:%d" % a.port, "--cache", CACHED, *b_args)
    harness.wait_for(lambda: harness.http_get(b.host, b.port, "/readyz")[0] == 200, timeout=20, message="proxy B ready")
    return a, b


def open_watches(base):
    status, body = clients.request(base + "/control/counters")
    assert status == 200, body
    return {k: v for k, v in json.loads(body)["openWatches"].items() if v}


class ChainClientsTest(Scenarios, unittest.TestCase):
    """kubectl, client-node and python-kubernetes through sidecar -> add-on -> apiserver."""

    apiserver_args = ("--enable-control",)

    def endpoint(self):
        # kubectl exec through both: each sidecar refuses exec and attach unless told (as
        # kubectl proxy does, docs/security.md).
        self.a, self.b = start_chain(self.processes, "http://127.0.0.1:%d" % self.apiserver.port,
                                     a_args=("--reject-paths=",), b_args=("--reject-paths=",))
        return "http://127.0.0.1:%d" % self.b.port

    def test_apiserver_sees_one_watch_per_cached_resource(self):
        informers = [clients.node_informer(self.url), clients.node_informer(self.url),
                     clients.python_informer(self.url)]
        for informer in informers:
            self.addCleanup(informer.stop)
        informers[0].wait_event(lambda e: e.get("event") == "started")
        informers[1].wait_event(lambda e: e.get("event") == "started")
        informers[2].wait_event(lambda e: e.get("event") == "listed")
        watch = self.kubectl.popen("get", "configmaps", "-A", "-w", "-o", "name")
        self.addCleanup(watch.kill)
        self.assertTrue(watch.stdout.readline())
        clients.ensure_namespace(self.upstream_url, "chain")
        clients.random_changes(self.upstream_url, "chain", 20, seed=4)
        for informer in informers:
            clients.wait_equal(informer, self.upstream_url)
        # Only A watches the apiserver, once per resource it caches.
        watches = open_watches(self.upstream_url)
        recent = json.loads(clients.request(self.upstream_url + "/control/counters")[1])["recentWatches"]
        self.assertEqual(set(watches), {"pods", "configmaps", "namespaces"}, (watches, recent))
        self.assertTrue(all(v == 1 for v in watches.values()), (watches, recent))


class ChainFidelityTest(unittest.TestCase):
    """What B answers equals what A and the apiserver answer."""

    @classmethod
    def setUpClass(cls):
        cls.processes = harness.Processes()
        cls.addClassCleanup(cls.processes.stop_all)
        cls.api = clients.start_apiserver(cls.processes, "--enable-control", "--sample-data",
                                          "--bookmark-interval", "1")
        cls.upstream = "http://127.0.0.1:%d" % cls.api.port
        clients.ensure_namespace(cls.upstream, "paged")
        for i in range(7):
            status, body = clients.request(cls.upstream + "/api/v1/namespaces/paged/configmaps", "POST",
                                           {"metadata": {"name": "cm-%d" % i}, "data": {"i": str(i)}})
            assert status == 201, body
        # Deployments: cached by A only, so B passes their reads through to A's cache.
        cls.a, cls.b = start_chain(cls.processes, cls.upstream, CACHED + ",deployments.apps",
                                   ("--no-cache", "deployments.apps"))

    def bases(self):
        return {"apiserver": self.upstream, "A": "http://127.0.0.1:%d" % self.a.port,
                "B": "http://127.0.0.1:%d" % self.b.port}

    def get(self, base, path):
        status, body = clients.request(base + path)
        self.assertEqual(status, 200, body)
        return json.loads(body)

    def wait_synced(self, base, path):
        """Waits until `base` lists the same items (names and RVs) as the apiserver."""
        def names(b):
            return [(i["metadata"]["name"], i["metadata"]["resourceVersion"]) for i in self.get(b, path)["items"]]
        harness.wait_for(lambda: names(base) == names(self.upstream), timeout=10, interval=0.05,
                         message="%s synced with the apiserver" % base)

    def pages(self, base, path, rv=None):
        """Every page of a LIST with limit=3: (continue token, items, list RV) per page."""
        out, token = [], None
        while True:
            query = {"limit": "3"}
            if token:
                query["continue"] = token
            elif rv is not None:
                query["resourceVersion"] = rv
                query["resourceVersionMatch"] = "Exact"
            body = self.get(base, path + "?" + urllib.parse.urlencode(query))
            token = body["metadata"].get("continue")
            out.append((token, body["items"], body["metadata"]["resourceVersion"],
                        body["metadata"].get("remainingItemCount")))
            if not token:
                return out

    def test_p2_p3_paged_list_tokens_items_and_rvs_are_the_apiserver_s(self):
        path = "/api/v1/namespaces/paged/configmaps"
        for base in self.bases().values():
            self.wait_synced(base, path)
        rv = self.get(self.upstream, path)["metadata"]["resourceVersion"]
        # R2/P3: an exact RV pins every page, so the three must agree byte for byte.
        want = self.pages(self.upstream, path, rv)
        self.assertEqual(len(want), 3)
        for name, base in self.bases().items():
            with self.subTest(through=name):
                self.assertEqual(self.pages(base, path, rv), want)
        # RV unset (C1): the pages of B equal those of A and of the apiserver.
        want = self.pages(self.upstream, path)
        for name, base in self.bases().items():
            with self.subTest(through=name, rv="unset"):
                self.assertEqual(self.pages(base, path), want)
        # A token minted by the apiserver continues through B, and B's through the apiserver.
        first = self.get(self.upstream, path + "?limit=3")
        token = urllib.parse.quote(first["metadata"]["continue"])
        self.assertEqual(self.get(self.bases()["B"], path + "?limit=3&continue=" + token),
                         self.get(self.upstream, path + "?limit=3&continue=" + token))

    def served_by(self, proxy, path):
        status, headers, body = harness.http_get(proxy.host, proxy.port, path)
        self.assertEqual(status, 200, body)
        return headers.get("X-Kube-Cache-Proxy", "").split(";")[0]

    def test_b_answers_from_its_own_cache(self):
        """The comparisons above are only worth something if B's cache answers them."""
        self.wait_synced(self.bases()["B"], "/api/v1/namespaces/paged/configmaps")
        rv = self.get(self.upstream, "/api/v1/namespaces/paged/configmaps")["metadata"]["resourceVersion"]
        for path in ("/api/v1/pods?resourceVersion=0", "/api/v1/namespaces/default/pods/web-0?resourceVersion=0",
                     "/api/v1/namespaces/paged/configmaps?limit=3&resourceVersionMatch=Exact&resourceVersion=" + rv,
                     "/api/v1/configmaps?resourceVersion=%s&resourceVersionMatch=NotOlderThan" % rv):
            with self.subTest(path=path):
                self.assertEqual(self.served_by(self.b, path), "cache")

    def test_each_hop_reports_how_it_served_once(self):
        path = "/apis/apps/v1/deployments?resourceVersion=0"
        harness.wait_for(lambda: self.served_by(self.a, path) == "cache", timeout=10, message="A caches deployments")
        conn = http.client.HTTPConnection(self.b.host, self.b.port, timeout=10)
        self.addCleanup(conn.close)
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        served = [v for k, v in response.getheaders() if k.lower() == "x-kube-cache-proxy"]
        self.assertEqual(served, ["upstream"])

    def test_get_and_list_rvs_pass_through_unchanged(self):
        for base in self.bases().values():
            self.wait_synced(base, "/api/v1/pods")
        want = self.get(self.upstream, "/api/v1/namespaces/default/pods/web-0")
        for name, base in self.bases().items():
            with self.subTest(through=name):
                self.assertEqual(self.get(base, "/api/v1/namespaces/default/pods/web-0"), want)
                self.assertEqual(self.get(base, "/api/v1/pods")["items"], self.get(self.upstream, "/api/v1/pods")["items"])

    def test_w2_w9_watch_list_through_the_chain(self):
        path = "/api/v1/pods?watch=true&allowWatchBookmarks=true&sendInitialEvents=true" \
               "&resourceVersionMatch=NotOlderThan"
        streams = {}
        for name, base in self.bases().items():
            self.wait_synced(base, "/api/v1/pods")
            port = int(base.rsplit(":", 1)[1])
            streams[name] = WatchStream("127.0.0.1", port, path)
            self.addCleanup(streams[name].close)
        for name, s in streams.items():
            s.wait(lambda ev: any(e["type"] == "BOOKMARK" for e in ev), message="initial-events-end from " + name)
        up = streams["apiserver"].snapshot()
        end = next(i for i, e in enumerate(up) if e["type"] == "BOOKMARK")
        for name in ("A", "B"):
            with self.subTest(through=name):
                got = streams[name].snapshot()
                got_end = next(i for i, e in enumerate(got) if e["type"] == "BOOKMARK")
                self.assertEqual(types(got[:got_end + 1]), types(up[:end + 1]))
                # The initial objects, RVs included, byte for byte.
                self.assertEqual(streams[name].raw[:got_end], streams["apiserver"].raw[:end])
                marker = got[got_end]["object"]["metadata"]
                self.assertEqual(marker["annotations"], {"k8s.io/initial-events-end": "true"})
                self.assertGreaterEqual(int(marker["resourceVersion"]),
                                        max(int(e["object"]["metadata"]["resourceVersion"]) for e in up[:end]))
        # A change made on the apiserver reaches every stream with the apiserver's RV.
        status, body = clients.request(self.upstream + "/api/v1/namespaces/default/pods", "POST",
                                       clients.pod("chained"))
        self.assertEqual(status, 201, body)
        created = json.loads(body)["metadata"]["resourceVersion"]
        for name, s in streams.items():
            event = s.wait(lambda ev: next((e for e in ev if e["type"] == "ADDED"
                                            and e["object"]["metadata"]["name"] == "chained"), None),
                           message="ADDED chained through " + name)
            self.assertEqual(event["object"]["metadata"]["resourceVersion"], created, name)

    def test_w7_bookmarks_reach_a_watcher_of_b(self):
        rv = self.get(self.upstream, "/api/v1/configmaps")["metadata"]["resourceVersion"]
        s = WatchStream("127.0.0.1", self.b.port,
                        "/api/v1/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=%s" % rv)
        self.addCleanup(s.close)
        # A write to another resource moves the cluster's revision; a consistent LIST of
        # configmaps brings the upstream's configmaps cache to it, so a bookmark is due (W7).
        clients.request(self.upstream + "/api/v1/namespaces/default/pods", "POST", clients.pod("bookmark-mover"))
        clients.request(self.upstream + "/api/v1/configmaps")
        bookmark = s.wait(lambda ev: next((e for e in ev if e["type"] == "BOOKMARK"), None), timeout=20,
                          message="bookmark through B")
        self.assertGreater(int(bookmark["object"]["metadata"]["resourceVersion"]), int(rv))


class ChainStartTest(unittest.TestCase):
    """A and B started together, as after a node's restart: B's informers reach A while A's
    cache still syncs, and A passes their watches through to the apiserver."""

    def test_watches_passed_through_while_a_syncs_come_back_to_its_cache(self):
        processes = harness.Processes()
        self.addCleanup(processes.stop_all)
        api = clients.start_apiserver(processes, "--enable-control")
        upstream = "http://127.0.0.1:%d" % api.port
        # Enough pods that A's first list takes a while.
        clients.control(upstream, "/control/load?resource=pods&count=30000&namespaces=10&nodes=50")
        a = processes.proxy(upstream, "--cache", CACHED, "--unsynced-watch-timeout", "2s")
        b = processes.proxy("http://127.0.0.1:%d" % a.port, "--cache", CACHED)
        for p in (a, b):
            harness.wait_for(lambda p=p: harness.http_get(p.host, p.port, "/readyz")[0] == 200, timeout=60,
                             message="proxy ready")
        status, _, body = harness.http_get(a.host, a.port, "/metrics")
        self.assertEqual(status, 200)
        passed = [line for line in body.decode().splitlines()
                  if line.startswith("kube_cache_proxy_cache_passthrough_total") and 'reason="starting"' in line]
        self.assertTrue(passed, "no watch of B's came while A's cache started: nothing tested")
        # Each watch passed through ends by the cut timeout; B's next one is served by A's cache.
        harness.wait_for(lambda: set(open_watches(upstream).values()) == {1}, timeout=20,
                         message="one apiserver watch per resource")
        self.assertEqual(set(open_watches(upstream)), {"pods", "configmaps", "namespaces"})
        # B still follows the apiserver.
        status, body = clients.request(upstream + "/api/v1/namespaces/default/pods", "POST", clients.pod("after-start"))
        self.assertEqual(status, 201, body)
        harness.wait_for(lambda: harness.http_get(b.host, b.port, "/api/v1/namespaces/default/pods/after-start"
                                                  "?resourceVersion=0")[0] == 200, timeout=10,
                         message="B's cache has the new pod")


if __name__ == "__main__":
    unittest.main()
