"""The informer manager end to end: the proxy in front of kube-test-apiserver caches the
configured resources (one upstream watch each, contract K2/W9), reports readiness only
once they have synced, exports per-resource cache metrics, caches other resources on
demand, never caches denied ones, and stops idle on-demand caches.
"""
import json
import re
import unittest

import clients
import harness

METRIC_LINE = re.compile(r'^(\w+)\{([^}]*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def metrics(proxy):
    """{(name, resource): value} for the per-resource cache metrics."""
    status, _, body = harness.http_get(proxy.host, proxy.port, "/metrics")
    assert status == 200, body
    out = {}
    for line in body.decode().splitlines():
        m = METRIC_LINE.match(line)
        if not m or not m.group(1).startswith("kube_cache_proxy_cache_"):
            continue
        labels = dict(LABEL.findall(m.group(2)))
        out[(m.group(1), labels.get("resource"))] = float(m.group(3))
    return out


def item_count(base, path):
    status, body = clients.request(base + path)
    assert status == 200, body
    return len(json.loads(body)["items"])


def readyz(proxy):
    return harness.http_get(proxy.host, proxy.port, "/readyz")[0]


class InformersTest(unittest.TestCase):
    def setUp(self):
        self.processes = harness.Processes()
        self.addCleanup(self.processes.stop_all)
        self.api = clients.start_apiserver(self.processes, "--enable-control", "--sample-data")
        self.base = "http://127.0.0.1:%d" % self.api.port

    def start_proxy(self, *args):
        return self.processes.proxy(self.base, "--cache", "pods,widgets.example.com", "--no-cache", "secrets", *args)

    def test_configured_resources_sync_before_ready_with_one_watch_each(self):
        # A slow upstream keeps discovery and the first sync from finishing at once.
        clients.request(self.base + "/control/slow?ms=300", "POST", b"")
        proxy = self.start_proxy()
        self.assertEqual(readyz(proxy), 500)
        clients.request(self.base + "/control/slow?ms=0", "POST", b"")
        harness.wait_for(lambda: readyz(proxy) == 200, timeout=30, message="/readyz 200")

        m = metrics(proxy)
        self.assertEqual(m[("kube_cache_proxy_cache_synced", "pods")], 1)
        self.assertEqual(m[("kube_cache_proxy_cache_synced", "widgets.example.com")], 1)
        self.assertEqual(m[("kube_cache_proxy_cache_objects", "pods")], item_count(self.base, "/api/v1/pods"))
        self.assertEqual(m[("kube_cache_proxy_cache_objects", "widgets.example.com")],
                         item_count(self.base, "/apis/example.com/v1/widgets"))
        self.assertGreater(m[("kube_cache_proxy_cache_json_bytes", "pods")], 0)
        self.assertGreater(m[("kube_cache_proxy_cache_resource_version", "pods")], 0)
        self.assertNotIn(("kube_cache_proxy_cache_objects", "configmaps"), m)

        watches = clients.counters(self.base)["openWatches"]
        self.assertEqual(watches.get("pods"), 1)
        self.assertEqual(watches.get("widgets.example.com"), 1)
        # Requests through the proxy never add upstream watches for cached resources.
        for _ in range(5):
            status, _, _ = harness.http_get(proxy.host, proxy.port, "/api/v1/pods")
            self.assertEqual(status, 200)
        self.assertEqual(clients.counters(self.base)["openWatches"].get("pods"), 1)

    def test_on_demand_cache_denied_resources_and_idle_stop(self):
        proxy = self.start_proxy("--cache-idle-timeout", "2s")
        harness.wait_for(lambda: readyz(proxy) == 200, timeout=30, message="/readyz 200")

        for _ in range(10):
            self.assertEqual(harness.http_get(proxy.host, proxy.port, "/api/v1/configmaps")[0], 200)
            self.assertEqual(harness.http_get(proxy.host, proxy.port, "/api/v1/secrets")[0], 200)
        harness.wait_for(lambda: metrics(proxy).get(("kube_cache_proxy_cache_synced", "configmaps")) == 1,
                         timeout=20, message="configmaps cached on demand")
        self.assertEqual(metrics(proxy)[("kube_cache_proxy_cache_objects", "configmaps")],
                         item_count(self.base, "/api/v1/configmaps"))
        watches = clients.counters(self.base)["openWatches"]
        self.assertEqual(watches.get("configmaps"), 1)
        self.assertEqual(watches.get("secrets", 0), 0)
        self.assertNotIn(("kube_cache_proxy_cache_objects", "secrets"), metrics(proxy))

        # Nobody reads configmaps any more: the cache and its upstream watch go away; the
        # configured resources stay.
        harness.wait_for(lambda: ("kube_cache_proxy_cache_objects", "configmaps") not in metrics(proxy),
                         timeout=20, message="idle configmaps cache stopped")
        harness.wait_for(lambda: clients.counters(self.base)["openWatches"].get("configmaps", 0) == 0,
                         timeout=10, message="configmaps upstream watch closed")
        self.assertEqual(clients.counters(self.base)["openWatches"].get("pods"), 1)
        self.assertEqual(readyz(proxy), 200)


if __name__ == "__main__":
    unittest.main()
