"""The operator-facing documents checked against the running program, so that they
cannot fall behind it: docs/metrics.md against a live /metrics, the Grafana dashboard's
queries against the same scrape, docs/configuration.md against `--help`; and the
per-client attribution (requests, watches held, bytes sent by User-Agent product token).
"""
import json
import os
import re
import subprocess
import unittest

import clients
import harness
from watch_streams import WatchStream

ROOT = clients.ROOT
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
# Families that only appear after a rare event the test does not provoke.
# Families that appear only after their first event (a slow watcher closed, a write held
# for --write-sync, which this test does not turn on).
RARE = {"kube_cache_proxy_cached_watchers_terminated_slow_total", "kube_cache_proxy_write_sync_held_total",
        "kube_cache_proxy_write_sync_wait_seconds",
        # only once a client speaks HTTP/2 (test_http2 reads it)
        "kube_cache_proxy_http2_connections_total",
        # only when a cacheable read could not be proven fresh (test_freshness reads it)
        "kube_cache_proxy_cache_passthrough_total",
        # gateway mode only; test_gateway reads it from a gateway's /metrics
        "kube_cache_proxy_gateway_decisions_total",
        # only once a bound is reached or a client is too slow (test_limits reads them)
        "kube_cache_proxy_limit_refusals_total", "kube_cache_proxy_connection_timeouts_total"}


def scrape(proxy):
    """{family: {"type": t, "labels": set of label names, "samples": [(name, labels, value)]}}."""
    status, _, body = harness.http_get(proxy.host, proxy.port, "/metrics")
    assert status == 200, status
    families = {}
    for line in body.decode().splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            families[name] = {"type": kind, "labels": set(), "samples": []}
            current = name
        elif line and not line.startswith("#"):
            m = SAMPLE.match(line)
            assert m, line
            labels = dict(LABEL.findall(m.group(2) or ""))
            family = families[current]
            family["samples"].append((m.group(1), labels, float(m.group(3))))
            family["labels"] |= set(labels) - {"le"}
    return families


def documented_metrics():
    """The table of docs/metrics.md: {name: (type, set of labels)}."""
    out = {}
    with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 5 and cells[0].startswith("`kube_cache_proxy_"):
                labels = set(re.findall(r"`([a-z_]+)`", cells[2]))
                out[cells[0].strip("`")] = (cells[1], labels)
    return out


def value(families, name, **labels):
    for sample, sample_labels, v in families.get(name, {}).get("samples", []):
        if sample == name and all(sample_labels.get(k) == want for k, want in labels.items()):
            return v
    return None


class OperatorDocsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = harness.Processes()
        cls.addClassCleanup(cls.processes.stop_all)
        cls.api = clients.start_apiserver(cls.processes, "--sample-data")
        cls.upstream = "http://127.0.0.1:%d" % cls.api.port
        cls.proxy = cls.processes.proxy(cls.upstream, "--cache", "pods,configmaps")
        harness.wait_for(lambda: harness.http_get(cls.proxy.host, cls.proxy.port, "/readyz")[0] == 200,
                         timeout=20, message="proxy ready")
        # A proxy whose upstream refuses connections, for the upstream error counter.
        closed_port = harness.free_port()
        cls.broken = cls.processes.proxy("http://127.0.0.1:%d" % closed_port, "--cache-on-demand=false")

    def get(self, proxy, path, user_agent):
        return harness.http_get(proxy.host, proxy.port, path, {"User-Agent": user_agent})

    def exercise(self):
        """Traffic that makes every family of the proxy appear."""
        self.assertEqual(self.get(self.proxy, "/api/v1/pods?resourceVersion=0", "lister/1.0")[0], 200)
        self.assertEqual(self.get(self.proxy, "/api/v1/namespaces", "lister/1.0")[0], 200)
        watch = WatchStream(self.proxy.host, self.proxy.port, "/api/v1/pods?watch=1&resourceVersion=0",
                            headers={"User-Agent": "watcher/2.0 (linux/amd64)"})
        self.addCleanup(watch.close)
        watch.wait(lambda ev: len(ev) >= 1)
        self.assertEqual(self.get(self.broken, "/api/v1/namespaces", "lister/1.0")[0], 503)
        return watch

    def test_every_exposed_metric_is_documented_with_its_type_and_labels(self):
        self.exercise()
        live = scrape(self.proxy)
        for name, family in scrape(self.broken).items():
            live.setdefault(name, family)
        docs = documented_metrics()
        self.assertTrue(docs)
        for name, family in live.items():
            with self.subTest(metric=name):
                self.assertIn(name, docs, "exposed on /metrics but missing from docs/metrics.md")
                kind, labels = docs[name]
                self.assertEqual(kind, family["type"])
                self.assertEqual(labels, family["labels"])
        self.assertEqual(set(docs) - set(live), RARE, "documented but never exposed")

    def test_grafana_dashboard_queries_only_metrics_that_exist(self):
        with open(os.path.join(ROOT, "deploy", "grafana", "kube-cache-proxy.json")) as f:
            dashboard = json.load(f)
        docs = documented_metrics()
        ids = [p["id"] for p in dashboard["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids must be unique")
        used = set()
        for panel in dashboard["panels"]:
            self.assertTrue(panel["targets"], panel["title"])
            for target in panel["targets"]:
                for name in re.findall(r"kube_cache_proxy_[a-z_]+", target["expr"]):
                    base = re.sub(r"_(bucket|sum|count)$", "", name)
                    with self.subTest(panel=panel["title"], metric=name):
                        self.assertIn(base, docs)
                        if base != name:
                            self.assertEqual(docs[base][0], "histogram")
                    used.add(base)
        self.assertGreaterEqual(len(used), 15)

    def test_client_attribution_by_user_agent(self):
        watch = self.exercise()
        families = scrape(self.proxy)
        self.assertGreaterEqual(value(families, "kube_cache_proxy_client_requests_total", client="lister"), 2)
        self.assertEqual(value(families, "kube_cache_proxy_client_watches", client="watcher"), 1)
        received = sum(len(line) for line in watch.raw)
        self.assertGreater(value(families, "kube_cache_proxy_client_response_bytes_total", client="watcher"), received)
        watch.close()
        harness.wait_for(lambda: value(scrape(self.proxy), "kube_cache_proxy_client_watches", client="watcher") == 0,
                         message="watch released")
        # A population of distinct clients is bounded: the overflow shares "other".
        for i in range(40):
            self.assertEqual(self.get(self.proxy, "/version", "tool-%d/1" % i)[0], 200)
        self.assertEqual(self.get(self.proxy, "/version", "")[0], 200)
        names = {labels["client"] for _, labels, _ in scrape(self.proxy)["kube_cache_proxy_client_requests_total"]["samples"]}
        self.assertIn("other", names)
        self.assertIn("unknown", names)
        self.assertLessEqual(len(names), 32 + 2)

    def test_configuration_reference_lists_exactly_the_flags_of_help(self):
        help_text = subprocess.run([harness.PROXY_BIN, "--help"], capture_output=True, text=True).stdout
        self.assertIn("Usage:", help_text)
        in_help = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", help_text))
        documented = set()
        with open(os.path.join(ROOT, "docs", "configuration.md")) as f:
            for line in f:
                if line.startswith("| `-"):
                    documented |= set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line.split("|")[1]))
        self.assertEqual(documented, in_help)

    def test_readme_links_the_operator_docs(self):
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        for doc in ("docs/architecture.md", "docs/configuration.md", "docs/consistency.md", "docs/metrics.md",
                    "docs/sizing.md", "docs/comparison.md", "deploy/grafana/kube-cache-proxy.json"):
            with self.subTest(doc=doc):
                self.assertTrue("(" + doc + ")" in readme, "README does not link " + doc)
                self.assertTrue(os.path.exists(os.path.join(ROOT, doc)))


if __name__ == "__main__":
    unittest.main()
