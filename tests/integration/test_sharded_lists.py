"""Sharded list and watch (KEP-5866, kube-apiserver's ShardedListAndWatch gate, issue 38)
against the test apiserver with the gate on and off. A LIST or WATCH with
shardSelector=shardRange(object.metadata.uid|namespace, 'START', 'END') || ... gets the
objects whose field's 64-bit FNV-1a hash is in one of the ranges; a typed list echoes the
canonical selector in metadata.shardInfo (a custom resource's UnstructuredList and a
PartialObjectMetadataList do not). With the gate off the apiserver ignores the parameter,
and so must the proxy. Contract clauses: S1 (selectors filter lists), W10 (selectors
filter watches), E1 (Status bodies as the apiserver's); the gate itself is outside the
contract: docs/api-semantics.md, "Feature gates".
"""
import http.client
import json
import unittest
import urllib.parse

import clients
import harness

TWO_TO_64 = 1 << 64


def shard_ranges(count, field="object.metadata.uid"):
    """The hash space cut in `count` equal shardRange() calls, as a sharded controller does."""
    out = []
    for i in range(count):
        start = i * TWO_TO_64 // count
        end = (i + 1) * TWO_TO_64 // count
        end_text = "0x10000000000000000" if end == TWO_TO_64 else "0x%016x" % end
        out.append("shardRange(%s, '0x%016x', '%s')" % (field, start, end_text))
    return out


def get_json(port, path, accept="application/json"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers={"Accept": accept})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), json.loads(r.read())
    finally:
        conn.close()


def names(body):
    return sorted("%s/%s" % (i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in body["items"])


def query(selector, extra=""):
    return "?shardSelector=" + urllib.parse.quote(selector, safe="") + extra


class ShardedListsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = harness.Processes()
        try:
            cls.api = clients.start_apiserver(cls.processes, "--enable-control",
                                              "--feature-gates", "ShardedListAndWatch=true")
            cls.base = "http://%s:%d" % (cls.api.host, cls.api.port)
            clients.control(cls.base, "/control/load?resource=pods&count=300&namespaces=6&nodes=3")
            for i in range(40):
                status, body = clients.request(cls.base + "/apis/example.com/v1/namespaces/default/widgets", "POST",
                                               {"apiVersion": "example.com/v1", "kind": "Widget",
                                                "metadata": {"name": "w-%d" % i}, "spec": {"color": "red"}})
                assert status == 201, body
            cls.proxy = cls.processes.proxy(cls.base, "--cache", "pods,widgets.example.com",
                                            "--cache-on-demand=false")
            harness.wait_for(lambda: harness.http_get(cls.proxy.host, cls.proxy.port, "/readyz")[0] == 200,
                             timeout=30, message="/readyz 200")
        except BaseException:
            cls.processes.stop_all()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop_all()

    def both(self, path, accept="application/json"):
        direct = get_json(self.api.port, path, accept)
        proxied = get_json(self.proxy.port, path, accept)
        return direct, proxied

    def test_S1_shards_of_2_4_and_16_partition_the_pods_as_the_apiserver_does(self):
        _, _, whole = get_json(self.api.port, "/api/v1/pods")
        for count in (2, 4, 16):
            seen = []
            for selector in shard_ranges(count):
                for rv in ("&resourceVersion=0", ""):
                    (ds, _, direct), (ps, headers, proxied) = self.both("/api/v1/pods" + query(selector, rv))
                    self.assertEqual((ds, ps), (200, 200), proxied)
                    self.assertTrue(headers.get("X-Kube-Cache-Proxy", "").startswith("cache"), headers)
                    self.assertEqual(names(proxied), names(direct), "%d shards, %s%s" % (count, selector, rv))
                    self.assertEqual(proxied["metadata"]["shardInfo"], {"selector": selector})
                    self.assertEqual(direct["metadata"]["shardInfo"], {"selector": selector})
                    self.assertNotIn("remainingItemCount", proxied["metadata"])
                seen += names(proxied)
            self.assertEqual(sorted(seen), names(whole), "%d shards: the union is the whole, no overlap" % count)

    def test_S1_ranges_joined_by_or_on_the_namespace_in_pages(self):
        ranges = shard_ranges(4, "object.metadata.namespace")
        selector = ranges[0] + " || " + ranges[2]
        (_, _, direct), (_, _, proxied) = self.both("/api/v1/pods" + query(selector))
        self.assertEqual(names(proxied), names(direct))
        self.assertEqual(proxied["metadata"]["shardInfo"]["selector"], selector)
        # Spelled loosely (double quotes, no spaces), it is echoed canonically.
        loose = selector.replace("'", '"').replace(", ", ",")
        (_, _, direct), (_, _, proxied) = self.both("/api/v1/pods" + query(loose))
        self.assertEqual(proxied["metadata"]["shardInfo"], direct["metadata"]["shardInfo"])
        self.assertEqual(proxied["metadata"]["shardInfo"]["selector"], selector)
        # Paged: every page carries the shard and the pages add up to the shard.
        paged, token = [], ""
        while True:
            extra = "&limit=7" + ("&continue=" + urllib.parse.quote(token) if token else "")
            status, _, page = get_json(self.proxy.port, "/api/v1/pods" + query(selector, extra))
            self.assertEqual(status, 200, page)
            self.assertEqual(page["metadata"]["shardInfo"]["selector"], selector)
            paged += names(page)
            token = page["metadata"].get("continue", "")
            if not token:
                break
        self.assertEqual(sorted(paged), names(direct))

    def test_S1_custom_resources_and_metadata_lists_carry_no_shard_info(self):
        selector = shard_ranges(2)[1]
        (_, _, direct), (_, headers, proxied) = self.both("/apis/example.com/v1/widgets" + query(selector))
        self.assertTrue(headers.get("X-Kube-Cache-Proxy", "").startswith("cache"), headers)
        self.assertEqual(names(proxied), names(direct))
        self.assertLess(len(proxied["items"]), 40)
        self.assertNotIn("shardInfo", proxied["metadata"])
        accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
        (_, _, direct), (_, _, proxied) = self.both("/api/v1/pods" + query(selector), accept)
        self.assertEqual(names(proxied), names(direct))
        self.assertNotIn("shardInfo", proxied["metadata"])
        self.assertNotIn("shardInfo", direct["metadata"])

    def test_E1_an_invalid_shard_selector_gets_the_apiservers_error(self):
        for selector in ("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
                         "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
                         "labels(x)"):
            (ds, _, direct), (ps, _, proxied) = self.both("/api/v1/pods" + query(selector))
            self.assertEqual((ps, proxied), (ds, direct), selector)
            self.assertEqual(ps, 500)
            self.assertTrue(proxied["message"].startswith("invalid shard selector: "), proxied)

    def test_W10_a_sharded_watch_sends_only_its_shards_events(self):
        selector = shard_ranges(2)[0]
        _, _, listed = get_json(self.proxy.port, "/api/v1/namespaces/load-0/pods")
        rv = listed["metadata"]["resourceVersion"]
        streams = {}
        for name, port in (("direct", self.api.port), ("proxy", self.proxy.port)):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/api/v1/namespaces/load-0/pods" +
                         query(selector, "&watch=1&resourceVersion=%s&timeoutSeconds=5" % rv))
            r = conn.getresponse()
            self.assertEqual(r.status, 200)
            streams[name] = (conn, r)
        created = []
        for i in range(30):
            status, body = clients.request(self.base + "/api/v1/namespaces/load-0/pods", "POST", clients.pod("s-%d" % i))
            self.assertEqual(status, 201, body)
            created.append(json.loads(body)["metadata"]["name"])
        got = {}
        for name, (conn, r) in streams.items():
            events = [json.loads(line) for line in r.read().splitlines() if line.strip()]
            conn.close()
            got[name] = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
        self.assertEqual(got["proxy"], got["direct"])
        self.assertTrue(0 < len(got["proxy"]) < 30, got["proxy"])
        _, _, shard = get_json(self.api.port, "/api/v1/namespaces/load-0/pods" + query(selector))
        in_shard = {i["metadata"]["name"] for i in shard["items"]}
        self.assertEqual({n for _, n in got["proxy"]}, in_shard & set(created))


class ShardingGateOffTest(unittest.TestCase):
    """An apiserver with the gate off ignores shardSelector; the proxy answers the same."""

    def test_S1_with_the_gate_off_the_selector_is_ignored(self):
        processes = harness.Processes()
        self.addCleanup(processes.stop_all)
        api = clients.start_apiserver(processes, "--enable-control")
        base = "http://%s:%d" % (api.host, api.port)
        clients.control(base, "/control/load?resource=pods&count=50&namespaces=2&nodes=1")
        proxy = processes.proxy(base, "--cache", "pods", "--cache-on-demand=false")
        harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/readyz")[0] == 200, timeout=30,
                         message="/readyz 200")
        for selector in (shard_ranges(4)[1], "anything at all"):
            _, _, direct = get_json(api.port, "/api/v1/pods" + query(selector, "&resourceVersion=0"))
            _, headers, proxied = get_json(proxy.port, "/api/v1/pods" + query(selector, "&resourceVersion=0"))
            self.assertTrue(headers.get("X-Kube-Cache-Proxy", "").startswith("cache"), headers)
            self.assertEqual(len(proxied["items"]), 50)
            self.assertEqual(names(proxied), names(direct))
            self.assertNotIn("shardInfo", proxied["metadata"])


if __name__ == "__main__":
    unittest.main()
