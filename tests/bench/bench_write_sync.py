#!/usr/bin/python3
"""Measures what read-your-writes (--write-sync) adds to a write's latency: the same
writes (create, patch, delete of a configmap) through two proxies in front of one
kube-test-apiserver, one with --write-sync and one without, interleaved round by round so
both see the same machine load; the apiserver directly as a reference. Not a test; the
numbers go to docs/benchmarks.md.

  KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/bench_write_sync.py [ROUNDS]
"""
import http.client
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402


def percentile(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * p))]


class Writer:
    def __init__(self, host, port, namespace):
        self.conn = http.client.HTTPConnection(host, port, timeout=30)
        self.ns = namespace
        self.samples = {"create": [], "patch": [], "delete": []}

    def call(self, verb, method, path, body=None, content_type="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if data else {}
        t = time.perf_counter()
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        r.read()
        self.samples[verb].append((time.perf_counter() - t) * 1000)
        assert r.status in (200, 201), (verb, r.status)

    def round(self, i):
        base = "/api/v1/namespaces/%s/configmaps" % self.ns
        self.call("create", "POST", base, {"metadata": {"name": "b-%d" % i}, "data": {"v": "0"}})
        self.call("patch", "PATCH", "%s/b-%d" % (base, i), {"data": {"v": "1"}}, "application/merge-patch+json")
        self.call("delete", "DELETE", "%s/b-%d" % (base, i))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    processes = harness.Processes()
    try:
        api = clients.start_apiserver(processes, "--enable-control")
        base = "http://%s:%d" % (api.host, api.port)
        proxies = {}
        for name, args in (("write-sync on", ["--write-sync"]), ("write-sync off", [])):
            px = processes.proxy(base, "--cache", "configmaps", "--cache-on-demand=false", *args)
            harness.wait_for(lambda: harness.http_get(px.host, px.port, "/readyz")[0] == 200, timeout=30,
                             message="/readyz")
            proxies[name] = px
        writers = {"direct": Writer(api.host, api.port, "bench-direct")}
        for name, px in proxies.items():
            writers[name] = Writer(px.host, px.port, "bench-" + name.replace(" ", "-"))
        for w in writers.values():
            clients.ensure_namespace(base, w.ns)
        for i in range(rounds):
            order = list(writers.values()) if i % 2 == 0 else list(reversed(writers.values()))
            for w in order:
                w.round(i)
        print("%d rounds of create+patch+delete of a configmap; latency in ms (p50 / p99)" % rounds)
        print("| path | create | patch | delete | all writes |")
        print("|---|---|---|---|---|")
        for name, w in writers.items():
            every = sum(w.samples.values(), [])
            cells = ["%.2f / %.2f" % (percentile(v, 0.5), percentile(v, 0.99)) for v in w.samples.values()]
            cells.append("%.2f / %.2f" % (percentile(every, 0.5), percentile(every, 0.99)))
            print("| %s | %s |" % (name, " | ".join(cells)))
        on = sum(writers["write-sync on"].samples.values(), [])
        off = sum(writers["write-sync off"].samples.values(), [])
        print("added by write-sync: p50 %+.2f ms, p99 %+.2f ms (on/off p50 ratio %.2f)" % (
            percentile(on, 0.5) - percentile(off, 0.5), percentile(on, 0.99) - percentile(off, 0.99),
            percentile(on, 0.5) / percentile(off, 0.5)))
    finally:
        processes.stop_all()


if __name__ == "__main__":
    main()
