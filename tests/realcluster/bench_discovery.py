#!/usr/bin/python3
"""Discovery from memory against the same requests passed through (not a CTest test; the
numbers go to docs/benchmarks.md and docs/design.md). One control plane, two proxies in
front of it: the default (--discovery-cache-ttl 1m) and --discovery-cache-ttl 0.

  KCP_BIN_DIR=build/bin KCP_REALCLUSTER_BIN=$(bash scripts/realcluster-build.sh | tail -1) \\
    /usr/bin/python3 tests/realcluster/bench_discovery.py [--requests N] [--clients N]

For each proxy: --clients keep-alive connections (default 4) each sending --requests GETs
(default 2,000) of /apis with kubectl's aggregated-discovery Accept: req/s, p50/p99
latency, the proxy's CPU per request, and the apiserver's discovery requests counted by its
apiserver_request_total.
"""
import argparse
import concurrent.futures
import http.client
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import realcluster  # noqa: E402
from bench_real import apiserver_metric, cpu_seconds, percentile  # noqa: E402

import harness  # noqa: E402

ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
          "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")


def client(port, requests):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    took = []
    for _ in range(requests):
        start = time.perf_counter()
        conn.request("GET", "/apis?timeout=32s", headers={"Accept": ACCEPT})
        r = conn.getresponse()
        r.read()
        took.append(time.perf_counter() - start)
        assert r.status == 200, r.status
    conn.close()
    return took


def upstream_discovery_requests(plane):
    return apiserver_metric(plane, "apiserver_request_total", 'resource=""')


def run(plane, proxy, clients, requests):
    client(proxy.port, 10)  # warm: the first fetch, connections
    cpu0, up0, t0 = cpu_seconds(proxy.pid), upstream_discovery_requests(plane), time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        took = sum(pool.map(lambda _: client(proxy.port, requests), range(clients)), [])
    wall = time.perf_counter() - t0
    cpu, up = cpu_seconds(proxy.pid) - cpu0, upstream_discovery_requests(plane) - up0
    return {"req/s": len(took) / wall, "p50 ms": percentile(took, 0.5) * 1000, "p99 ms": percentile(took, 0.99) * 1000,
            "proxy CPU us/req": cpu / len(took) * 1e6, "apiserver non-resource requests": int(up)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    processes = harness.Processes()
    workdir = tempfile.mkdtemp(prefix="bench-discovery-")
    try:
        plane = realcluster.ControlPlane(processes, workdir)
        cached = realcluster.start_proxy(processes, plane, "--cache-start-wait", "5s")
        passed = realcluster.start_proxy(processes, plane, "--discovery-cache-ttl", "0")
        size = len(plane.request("/apis", headers={"Accept": ACCEPT}).body)
        print("GET /apis (aggregated discovery, %d bytes), %d clients x %d requests" % (size, args.clients,
                                                                                         args.requests))
        for name, proxy in (("passed through", passed), ("from memory", cached),
                            ("passed through", passed), ("from memory", cached)):
            result = run(plane, proxy, args.clients, args.requests)
            print("  %-15s %s" % (name, ", ".join("%s %.1f" % kv if isinstance(kv[1], float) else "%s %d" % kv
                                                  for kv in result.items())))
    finally:
        processes.stop_all()
        os.system("rm -rf '%s'" % workdir)


if __name__ == "__main__":
    main()
