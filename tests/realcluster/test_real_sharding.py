"""Sharded list and watch (KEP-5866) against kube-apiserver 1.37.2 with the
ShardedListAndWatch gate on, and with it off (issue 38). The oracle for what the proxy
answers from its cache: the shard's members (64-bit FNV-1a of the UID or namespace, the
hash the proxy computes itself), metadata.shardInfo in typed JSON and protobuf lists and
not in a custom resource's or a PartialObjectMetadataList, the invalid selector's 500,
and the events of a sharded watch. Contract clauses S1 (selectors filter lists), W10
(selectors filter watches), E1 (errors as the apiserver's); the gate: docs/api-semantics.md.
"""
import http.client
import json
import random
import tempfile
import threading
import unittest
import urllib.parse

import realcluster

import clients
import harness
from test_real_informers import churn

TWO_TO_64 = 1 << 64
PROTOBUF = "application/vnd.kubernetes.protobuf"


def shard_ranges(count, field="object.metadata.uid"):
    out = []
    for i in range(count):
        start, end = i * TWO_TO_64 // count, (i + 1) * TWO_TO_64 // count
        end_text = "0x10000000000000000" if end == TWO_TO_64 else "0x%016x" % end
        out.append("shardRange(%s, '0x%016x', '%s')" % (field, start, end_text))
    return out


def query(selector, extra=""):
    return "?shardSelector=" + urllib.parse.quote(selector, safe="") + extra


def names(body):
    return sorted("%s/%s" % (i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in body["items"])


def proxy_get(proxy, path, accept="application/json"):
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    try:
        conn.request("GET", path, headers={"Accept": accept})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def proxy_get_raw(proxy, path):
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    try:
        conn.request("GET", path, headers={"Accept": "application/json"})
        return conn.getresponse().read()
    finally:
        conn.close()


def fill(plane, namespace, configmaps, widgets, pods=0):
    plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": namespace}})
    for i in range(pods):
        a = plane.request("/api/v1/namespaces/%s/pods" % namespace, "POST", clients.pod("pod-%d" % i))
        assert a.status == 201, a.body
    for i in range(configmaps):
        a = plane.request("/api/v1/namespaces/%s/configmaps" % namespace, "POST",
                          {"metadata": {"name": "cm-%d" % i}, "data": {"i": str(i)}})
        assert a.status == 201, a.body
    for i in range(widgets):
        a = plane.request("/apis/example.com/v1/namespaces/%s/widgets" % namespace, "POST",
                          {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w-%d" % i},
                           "spec": {"color": "red", "size": i}})
        assert a.status == 201, a.body


@realcluster.require_bin
class ShardedListAndWatchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        plane = realcluster.start_plane(cls, "sharding-real-", class_level=True,
                                        feature_gates="ShardedListAndWatch=true")
        fill(plane, "shards", 100, 40, pods=60)
        cls.proxy = realcluster.start_proxy(cls.processes, plane, "--cache", "pods,configmaps,widgets.example.com",
                                            "--cache-on-demand=false")

    def test_S1_shards_of_2_4_and_16_are_the_apiservers(self):
        for collection in ("/api/v1/pods", "/api/v1/configmaps", "/apis/example.com/v1/widgets"):
            whole = self.plane.request(collection).json()
            for count in (2, 4, 16):
                union = []
                for selector in shard_ranges(count):
                    direct = self.plane.request(collection + query(selector))
                    status, headers, body = proxy_get(self.proxy, collection + query(selector))
                    self.assertEqual((direct.status, status), (200, 200), body[:300])
                    self.assertTrue(headers.get("X-Kube-Cache-Proxy", "").startswith("cache"), headers)
                    proxied = json.loads(body)
                    self.assertEqual(names(proxied), names(direct.json()), "%s, %d shards: %s" % (collection, count,
                                                                                                 selector))
                    self.assertEqual(proxied["metadata"].get("shardInfo"), direct.json()["metadata"].get("shardInfo"))
                    if "widgets" not in collection:
                        self.assertEqual(proxied["metadata"]["shardInfo"], {"selector": selector})
                    union += names(proxied)
                self.assertEqual(sorted(union), names(whole), "%s, %d shards: the union is the whole" % (collection,
                                                                                                      count))

    def test_S1_a_shard_with_a_label_selector_and_in_a_watch_list(self):
        selector = shard_ranges(4)[2]
        path = "/api/v1/pods" + query(selector, "&labelSelector=app%3Dt")
        direct = self.plane.request(path).json()
        status, _, body = proxy_get(self.proxy, path)
        self.assertEqual(status, 200, body[:300])
        self.assertEqual(names(json.loads(body)), names(direct))
        self.assertTrue(direct["items"])
        # A watch-list of the shard (client-go's informer start): the same initial events.
        path = "/api/v1/pods" + query(selector, "&watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
                                                "&resourceVersionMatch=NotOlderThan&timeoutSeconds=2")
        got = {}
        got["direct"] = self.plane.request(path).body
        got["proxy"] = proxy_get_raw(self.proxy, path)
        events = {k: [json.loads(line) for line in v.splitlines() if line.strip()] for k, v in got.items()}
        added = {k: sorted(e["object"]["metadata"]["name"] for e in v if e["type"] == "ADDED") for k, v in events.items()}
        self.assertEqual(added["proxy"], added["direct"])
        self.assertTrue(added["proxy"])
        end = [e for e in events["proxy"] if e["type"] == "BOOKMARK" and
               e["object"]["metadata"].get("annotations", {}).get("k8s.io/initial-events-end") == "true"]
        self.assertEqual(len(end), 1, events["proxy"][-3:])

    def test_S1_namespace_ranges_protobuf_and_exact_reads_are_byte_for_byte(self):
        ranges = shard_ranges(4, "object.metadata.namespace")
        selector = ranges[1] + " || " + ranges[3]
        rv = self.plane.request("/api/v1/configmaps?limit=1").json()["metadata"]["resourceVersion"]
        for accept in ("application/json", PROTOBUF):
            path = "/api/v1/configmaps" + query(selector, "&resourceVersion=%s&resourceVersionMatch=Exact" % rv)
            direct = self.plane.request(path, headers={"Accept": accept})
            status, _, body = proxy_get(self.proxy, path, accept)
            self.assertEqual((direct.status, status), (200, 200), body[:300])
            self.assertEqual(body, direct.body, accept)
            self.assertIn(selector.encode(), body)

    def test_S1_custom_resources_and_metadata_lists_carry_no_shard_info(self):
        selector = shard_ranges(2)[0]
        for path, accept in (("/apis/example.com/v1/namespaces/shards/widgets", "application/json"),
                             ("/api/v1/namespaces/shards/configmaps",
                              "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")):
            direct = self.plane.request(path + query(selector), headers={"Accept": accept}).json()
            status, headers, body = proxy_get(self.proxy, path + query(selector), accept)
            self.assertEqual(status, 200, body[:300])
            proxied = json.loads(body)
            self.assertEqual(names(proxied), names(direct), path)
            self.assertNotIn("shardInfo", direct["metadata"], path)
            self.assertNotIn("shardInfo", proxied["metadata"], path)

    def test_E1_invalid_shard_selectors_get_the_apiservers_500(self):
        for selector in ("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
                         "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
                         "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')"):
            direct = self.plane.request("/api/v1/configmaps" + query(selector))
            status, _, body = proxy_get(self.proxy, "/api/v1/configmaps" + query(selector))
            self.assertEqual((status, json.loads(body)), (direct.status, direct.json()), selector)
            self.assertEqual(status, 500)

    def test_W10_sharded_watches_send_what_the_apiservers_sends(self):
        for collection, make in (("/api/v1/namespaces/shards/pods", lambda i: clients.pod("watched-%d" % i)),
                                 ("/api/v1/namespaces/shards/configmaps", lambda i: {"metadata": {"name": "watched-%d" % i}}),
                                 ("/apis/example.com/v1/namespaces/shards/widgets",
                                  lambda i: {"apiVersion": "example.com/v1", "kind": "Widget",
                                             "metadata": {"name": "watched-%d" % i}, "spec": {"color": "blue"}})):
            got = self.watch_both(collection, shard_ranges(2)[1], lambda: [
                self.assertEqual(self.plane.request(collection, "POST", make(i)).status, 201) for i in range(30)])
            self.assertEqual(got.get("proxy"), got.get("direct"), collection)
            self.assertTrue(0 < len(got["proxy"]) < 30, got["proxy"])

    def watch_both(self, collection, selector, write):
        rv = self.plane.request(collection + "?limit=1").json()["metadata"]["resourceVersion"]
        path = collection + query(selector, "&watch=1&resourceVersion=%s&timeoutSeconds=5" % rv)
        got = {}

        def read(name, conn):
            headers = {"Accept": "application/json"}
            if name == "direct":
                headers["Authorization"] = "Bearer " + realcluster.TOKENS["admin"]
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            got[name] = [(e["type"], e["object"]["metadata"]["name"])
                         for e in (json.loads(line) for line in r.read().splitlines() if line.strip())]
            conn.close()
        readers = [threading.Thread(target=read, args=("direct", self.plane.connection())),
                   threading.Thread(target=read, args=("proxy", http.client.HTTPConnection("127.0.0.1", self.proxy.port,
                                                                                           timeout=30)))]
        for t in readers:
            t.start()
        write()
        for t in readers:
            t.join(30)
        return got

    def test_S1_a_client_go_informer_per_shard_ends_equal_to_its_shard_after_churn(self):
        workdir = tempfile.mkdtemp(prefix="shard-informers-", dir=self.workdir)
        kubeconfig = realcluster.proxy_kubeconfig(workdir, self.proxy.port)
        selectors = shard_ranges(4)
        informers = []
        for selector in selectors:
            informer = clients.LineClient([realcluster.tool("informer"), "--kubeconfig", kubeconfig,
                                           "--shard-selector", selector], cwd=workdir)
            self.addCleanup(informer.stop)
            informers.append(informer)
        for informer in informers:
            informer.wait_event(lambda e: e.get("event") == "synced", timeout=60)
        churn(self.plane, "shards", 80, random.Random(38))
        union = {}
        for selector, informer in zip(selectors, informers):
            want = self.plane.truth("/api/v1/pods" + query(selector))
            harness.wait_for(lambda: informer.dump() == want, timeout=30, interval=0.3,
                             message="the informer of %s equals its shard" % selector)
            self.assertFalse(set(union) & set(want))
            union.update(want)
        self.assertEqual(union, self.plane.truth())


@realcluster.require_bin
class ShardingGateOffTest(unittest.TestCase):
    def test_S1_with_the_gate_off_a_shard_selector_is_ignored_as_upstream(self):
        plane = realcluster.start_plane(self, "sharding-off-real-")
        fill(plane, "shards", 20, 0, pods=10)
        proxy = realcluster.start_proxy(self.processes, plane, "--cache", "configmaps,pods", "--cache-on-demand=false")
        for selector in (shard_ranges(4)[2], "not a selector"):
            direct = plane.request("/api/v1/pods" + query(selector, "&watch=1&sendInitialEvents=true"
                                                                   "&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"))
            proxied = proxy_get_raw(proxy, "/api/v1/pods" + query(selector, "&watch=1&sendInitialEvents=true"
                                                                          "&resourceVersionMatch=NotOlderThan"
                                                                          "&timeoutSeconds=1"))
            self.assertEqual(len(proxied.splitlines()), len(direct.body.splitlines()))
            direct = plane.request("/api/v1/namespaces/shards/configmaps" + query(selector)).json()
            status, headers, body = proxy_get(proxy, "/api/v1/namespaces/shards/configmaps" + query(selector))
            self.assertEqual(status, 200, body[:300])
            self.assertTrue(headers.get("X-Kube-Cache-Proxy", "").startswith("cache"), headers)
            proxied = json.loads(body)
            self.assertEqual(len(proxied["items"]), 20)
            self.assertEqual(names(proxied), names(direct))
            self.assertNotIn("shardInfo", direct["metadata"])
            self.assertNotIn("shardInfo", proxied["metadata"])


if __name__ == "__main__":
    unittest.main()
