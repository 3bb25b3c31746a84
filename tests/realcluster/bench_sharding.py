#!/usr/bin/python3
"""Benchmark of sharded LISTs (issue 38, KEP-5866; not a CTest test, the numbers go to
docs/benchmarks.md): kube-apiserver 1.37.2 with ShardedListAndWatch on, --pods pods
(default 10,000); a round is the 16 shards' LISTs (shardRange over the UID's hash space),
sequential and then 16 at once, at RV=0 and RV unset, plain and gzip'd; the median of 5
rounds' wall time and the server's CPU per round (utime+stime from /proc), apiserver vs the
proxy in the same run, with the unsharded LIST beside them.

  KCP_BIN_DIR=build/bin KCP_REALCLUSTER_BIN=$(bash scripts/realcluster-build.sh | tail -1) \\
    /usr/bin/python3 tests/realcluster/bench_sharding.py [--pods N]
"""
import argparse
import concurrent.futures
import gzip
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import realcluster  # noqa: E402
from bench_real import apiserver_pid, cpu_seconds, create_pods  # noqa: E402
from test_real_sharding import shard_ranges  # noqa: E402

import harness  # noqa: E402

ROUNDS = 5


def connect(plane, proxy, name):
    if name == "apiserver":
        return plane.connection(60), {"Authorization": "Bearer admin-token", "User-Agent": "bench"}
    return http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=60), {"User-Agent": "bench"}


def list_once(conn, headers, path, count):
    """The items of one LIST when `count`, else 0: decoding is the client's time, not the
    server's, and stays out of the timed rounds."""
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, body[:300]
    if not count:
        return 0
    plain = gzip.decompress(body) if r.getheader("Content-Encoding") == "gzip" else body
    return len(json.loads(plain)["items"])


def run_round(plane, proxy, name, paths, headers, parallel, count=False):
    """Wall time of one round (to each answer's last byte) and, with `count`, the items it
    read; a connection per LIST."""
    def one(path):
        conn, auth = connect(plane, proxy, name)
        try:
            return list_once(conn, dict(auth, **headers), path, count)
        finally:
            conn.close()
    started = time.monotonic()
    if parallel:
        with concurrent.futures.ThreadPoolExecutor(len(paths)) as pool:
            items = sum(pool.map(one, paths))
    else:
        items = sum(one(p) for p in paths)
    return time.monotonic() - started, items


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=10000)
    args = parser.parse_args()
    processes = harness.Processes()
    workdir = tempfile.mkdtemp(prefix="bench-sharding-")
    try:
        plane = realcluster.ControlPlane(processes, workdir, "ShardedListAndWatch=true")
        create_pods(plane, "bench", args.pods)
        proxy = realcluster.start_proxy(processes, plane, "--cache", "pods")
        pids = {"apiserver": apiserver_pid(plane), "proxy": proxy.pid}
        shards = ["/api/v1/pods?shardSelector=" + urllib.parse.quote(s, safe="") for s in shard_ranges(16)]
        print("| server | RV | encoding | LISTs | median ms per round | server CPU ms per round | items |")
        print("|---|---|---|---|---|---|---|")
        for rv in ("resourceVersion=0", ""):
            for gz in (False, True):
                headers = {"Accept": "application/json"}
                if gz:
                    headers["Accept-Encoding"] = "gzip"
                for shape, paths, parallel in (("1 unsharded", ["/api/v1/pods"], False),
                                               ("16 shards, sequential", shards, False),
                                               ("16 shards, at once", shards, True)):
                    full = [p + ("&" if "?" in p else "?") + rv if rv else p for p in paths]
                    for name in ("apiserver", "proxy"):
                        _, items = run_round(plane, proxy, name, full, headers, parallel, count=True)  # warm
                        cpu0 = cpu_seconds(pids[name])
                        results = [run_round(plane, proxy, name, full, headers, parallel) for _ in range(ROUNDS)]
                        cpu = (cpu_seconds(pids[name]) - cpu0) / ROUNDS
                        print("| %s | %s | %s | %s | %.1f | %.1f | %d |" % (
                            name, rv or "RV unset", "gzip" if gz else "plain", shape,
                            statistics.median(r[0] for r in results) * 1000, cpu * 1000, items), flush=True)
    finally:
        processes.stop_all()
        subprocess.run(["rm", "-rf", workdir])


if __name__ == "__main__":
    main()
