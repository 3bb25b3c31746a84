#!/usr/bin/python3
"""Consistent reads against the real kube-apiserver, direct vs through the proxy, on a
quiet control plane (issue 34; not a CTest test, the numbers go to docs/benchmarks.md):

  KCP_BIN_DIR=build/bin KCP_REALCLUSTER_BIN=$(bash scripts/realcluster-build.sh | tail -1) \\
    /usr/bin/python3 tests/realcluster/bench_reads.py [--reads N] [--seconds S]

- sequential: one client, --reads GETs of a configmap and --reads LISTs of its namespace's
  20 configmaps with resourceVersion unset (what typed clients, kubectl and scripts send):
  p50/p99 and the bound of the issue, p50 through the proxy <= 1.5 x direct + 0.5 ms;
- concurrent: 16 clients reading as fast as they can for --seconds: reads/s, p50/p99 and
  the upstream requests per read (the apiserver's apiserver_request_total, less the
  benchmark's own metric reads);
- paced: 50 clients at 1,000 reads/s in all for --seconds: p50/p99.
"""
import argparse
import concurrent.futures
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import realcluster  # noqa: E402
from bench_real import Client, apiserver_metric, percentile  # noqa: E402

import harness  # noqa: E402

GET = "/api/v1/namespaces/default/configmaps/configmap-0"
LIST = "/api/v1/namespaces/default/configmaps"


def sequential(plane, proxy, reads):
    print("## Sequential consistent reads, one client, %d each\n" % reads)
    print("| read | direct p50 ms | proxy p50 ms | bound ms (1.5x + 0.5) | direct p99 ms | proxy p99 ms | from memory |")
    print("|---|---|---|---|---|---|---|")
    for name, path in (("GET", GET), ("LIST", LIST)):
        lat = {}
        cached = 0
        for who, port in (("direct", None), ("proxy", proxy.port)):
            c = Client(plane, port)
            for _ in range(20):
                c.get(path)  # warm: connections, the proxy's first probe
            lat[who] = []
            for _ in range(reads):
                status, ms, served, _, body = c.get(path)
                assert status == 200, body[:300]
                lat[who].append(ms)
                cached += port is not None and served.startswith("cache")
        d50, p50 = percentile(lat["direct"], 0.5), percentile(lat["proxy"], 0.5)
        print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %d of %d |" % (
            name, d50, p50, 1.5 * d50 + 0.5, percentile(lat["direct"], 0.99), percentile(lat["proxy"], 0.99),
            cached, reads))


def run_clients(plane, port, clients, seconds, interval):
    """`clients` threads reading GET for `seconds`, each every `interval` s (0: at once)."""
    stop = time.monotonic() + seconds

    def run():
        c, out = Client(plane, port), []
        next_at = time.monotonic()
        while time.monotonic() < stop:
            status, ms, _, _, body = c.get(GET)
            assert status == 200, body[:300]
            out.append(ms)
            if interval:
                next_at += interval
                time.sleep(max(0.0, next_at - time.monotonic()))
        return out
    lat = []
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for out in pool.map(lambda _: run(), range(clients)):
            lat.extend(out)
    return lat


def concurrent_reads(plane, proxy, clients, seconds, interval, title):
    print("\n## %s\n" % title)
    print("| clients | reads/s | p50 ms | p99 ms | upstream requests per read |")
    print("|---|---|---|---|---|")
    for who, port in (("direct", None), ("proxy", proxy.port)):
        req0 = apiserver_metric(plane, "apiserver_request_total")
        lat = run_clients(plane, port, clients, seconds, interval)
        upstream = apiserver_metric(plane, "apiserver_request_total") - req0 - 1  # less the metric read
        per_read = 1.0 if port is None else upstream / len(lat)
        print("| %s | %.0f | %.2f | %.2f | %.3f |" % (who, len(lat) / seconds, percentile(lat, 0.5),
                                                      percentile(lat, 0.99), per_read))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reads", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    processes = harness.Processes()
    workdir = tempfile.mkdtemp(prefix="bench-reads-")
    try:
        plane = realcluster.ControlPlane(processes, workdir)
        for i in range(20):
            a = plane.request(LIST, "POST", {"metadata": {"name": "configmap-%d" % i}, "data": {"v": "x" * 200}})
            assert a.status in (201, 409), a.body
        proxy = realcluster.start_proxy(processes, plane, "--cache", "configmaps", "--cache-on-demand=false")
        sequential(plane, proxy, args.reads)
        concurrent_reads(plane, proxy, 16, args.seconds, 0, "16 concurrent readers of one configmap, %g s" % args.seconds)
        concurrent_reads(plane, proxy, 50, args.seconds, 0.05,
                         "50 clients paced to 1,000 consistent GETs/s in all, %g s" % args.seconds)
    finally:
        processes.stop_all()
        os.system("rm -rf " + workdir)


if __name__ == "__main__":
    main()
