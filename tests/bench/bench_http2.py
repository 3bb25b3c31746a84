#!/usr/bin/python3
"""HTTP/2 serving benchmarks (issue 18, native HTTP/2), each run against every proxy build
given, in the same run, with one test apiserver behind all of them:

1. Header memory: BENCH_WATCHES watches over h2c (10 streams per connection), each with
   250 references to one 4,000-byte HPACK entry (4 KB on the wire, 1 MB decoded), and as
   many with no extra field: the proxy's RSS growth per watch (VmRSS once every watch has
   its events, minus VmRSS before).
2. Cached GET of one pod (RV=0): h2load over h2c (10 connections x 10 streams) and over
   HTTP/1.1 (--h1, 100 connections), BENCH_GETS requests each: req/s and the proxy's CPU
   per request (utime + stime from /proc/PID/stat).
3. LIST of BENCH_PODS pods (RV=0, from the cache): h2load, one connection, BENCH_LISTS
   requests, over h2c and over HTTP/1.1, BENCH_LIST_ROUNDS rounds alternating them: time and
   the proxy's CPU per LIST (the median round), and the median of the rounds' h2c/h1 ratios.
4. Watch deliveries: BENCH_FANOUT watches of one namespace's pods from the cache, over h2c
   (100 streams per connection) and over HTTP/1.1 (a connection each), both by h2load,
   while the test apiserver churns pods there for BENCH_CHURN_SECONDS: the proxy's CPU per
   delivered event (the events one counting watch saw, times the watches).

Not a test; the numbers go to docs/benchmarks.md.

  KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/bench_http2.py [OTHER_PROXY_BINARY ...]
  BENCH_WATCHES=100 BENCH_GETS=100000 BENCH_PODS=10000 BENCH_LISTS=20 BENCH_LIST_ROUNDS=3 BENCH_FANOUT=2000
  BENCH_CHURN_SECONDS=10 (defaults)
"""
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402
from h2client import H2Client  # noqa: E402

WATCHES = int(os.environ.get("BENCH_WATCHES", "100"))
GETS = int(os.environ.get("BENCH_GETS", "100000"))
PODS = int(os.environ.get("BENCH_PODS", "10000"))
LISTS = int(os.environ.get("BENCH_LISTS", "20"))
LIST_ROUNDS = int(os.environ.get("BENCH_LIST_ROUNDS", "3"))
FANOUT = int(os.environ.get("BENCH_FANOUT", "2000"))
CHURN_SECONDS = int(os.environ.get("BENCH_CHURN_SECONDS", "10"))
STREAMS_PER_CONNECTION = 10
FILLER = [("x-filler", "f" * 4000)] * 250


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_idle(pid):
    """Until the process uses no CPU of its own: the packer compresses a loaded store in the
    background, and the CPU measured here is the whole process's."""
    while True:
        before = cpu_seconds(pid)
        time.sleep(1)
        if cpu_seconds(pid) - before < 0.02:
            return


def h2load(url, *args):
    """(requests/s, requests that succeeded)."""
    out = subprocess.run(["h2load", *args, url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", out).group(1))
    succeeded = int(re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out).group(1))
    return rps, succeeded


def watch_rss(proxy, namespace_path, headers):
    """KiB of proxy RSS per watch for WATCHES watches sending `headers`."""
    connections = [H2Client("127.0.0.1", proxy.port) for _ in range(WATCHES // STREAMS_PER_CONNECTION)]
    try:
        warm = connections[0].request("GET", namespace_path, headers)
        connections[0].wait(lambda: warm.status == 200, message="the first watch")
        rss0 = harness.rss_kib(proxy.pid)
        watches = [(c, c.request("GET", namespace_path, headers)) for c in connections
                   for _ in range(STREAMS_PER_CONNECTION - (1 if c is connections[0] else 0))]
        for c, w in watches:
            c.wait(lambda: w.status == 200 and b"ADDED" in bytes(w.data), timeout=60, message="a watch's events")
        time.sleep(1)
        return (harness.rss_kib(proxy.pid) - rss0) / len(watches)
    finally:
        for c in connections:
            c.close()


def count_events(port, path, counted):
    """Counts the event lines of one HTTP/1.1 watch until it ends (into counted[0])."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path).encode())
    with sock, sock.makefile("rb") as f:
        while f.readline() not in (b"\r\n", b""):
            pass
        while True:
            size = f.readline()
            if not size or int(size.strip(), 16) == 0:
                return
            chunk = f.read(int(size.strip(), 16) + 2)
            counted[0] += chunk.count(b"\n") - 1


def watch_deliveries(proxy, base, args):
    """(deliveries, the proxy's CPU µs per delivery) for FANOUT watches opened by h2load
    with `args` while pods churn."""
    path = "/api/v1/namespaces/churn/pods?watch=1&resourceVersion=0&timeoutSeconds=%d" % (CHURN_SECONDS + 3)
    counted = [0]
    counter = threading.Thread(target=count_events, args=(proxy.port, path, counted))
    counter.start()
    load = subprocess.Popen(["h2load", *args, "http://127.0.0.1:%d%s" % (proxy.port, path)],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(2)  # the watches open and get their initial state
    cpu0 = cpu_seconds(proxy.pid)
    clients.control(base, "/control/churn?rate=20&seconds=%d" % CHURN_SECONDS)
    out = load.communicate()[0]
    cpu = cpu_seconds(proxy.pid) - cpu0
    counter.join()
    succeeded = int(re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out).group(1))
    deliveries = succeeded * counted[0]
    return deliveries, cpu / max(deliveries, 1) * 1e6


def with_requests(args, n):
    out = list(args)
    out[out.index("-n") + 1] = str(n)
    return out


def bench(binary, base, namespace, pod_name):
    procs = harness.Processes()
    try:
        proxy = procs.start([binary, "--listen", "127.0.0.1:0", "--upstream", base, "--cache", "pods"])
        harness.wait_for(lambda: harness.http_get("127.0.0.1", proxy.port, "/readyz")[0] == 200, timeout=120,
                         interval=0.2, message="proxy ready")
        wait_idle(proxy.pid)
        url = "http://127.0.0.1:%d" % proxy.port
        # One ADDED event each: the watch's own cost, not its initial state's.
        watch_path = "/api/v1/namespaces/%s/pods?watch=1&resourceVersion=0&fieldSelector=metadata.name%%3D%s" % (
            namespace, pod_name)
        pod_path = "/api/v1/namespaces/%s/pods/%s?resourceVersion=0" % (namespace, pod_name)
        row = {"filler": watch_rss(proxy, watch_path, FILLER), "plain": watch_rss(proxy, watch_path, [])}
        lists = (("list h2c", ["-n", str(LISTS), "-c", "1", "-t", "1"]),
                 ("list h1", ["--h1", "-n", str(LISTS), "-c", "1", "-t", "1"]))
        for label, args in (("get h2c", ["-n", str(GETS), "-c", "10", "-m", "10", "-t", "1"]),
                            ("get h1", ["--h1", "-n", str(GETS), "-c", "100", "-t", "1"])) + lists * LIST_ROUNDS:
            path = pod_path if label.startswith("get") else "/api/v1/pods?resourceVersion=0"
            h2load(url + path, *with_requests(args, max(2, int(args[args.index("-n") + 1]) // 10)))  # warm-up
            cpu0 = cpu_seconds(proxy.pid)
            rps, done = h2load(url + path, *args)
            row.setdefault(label, []).append((rps, (cpu_seconds(proxy.pid) - cpu0) / max(done, 1)))
        # The rounds alternate the protocols; each is its median round (by CPU), and the
        # ratio the median of the rounds' ratios.
        ratios = [a[1] / b[1] for a, b in zip(row["list h2c"], row["list h1"])]
        row["list ratio"] = statistics.median(ratios)
        for label in row:
            if isinstance(row[label], list):
                row[label] = sorted(row[label], key=lambda r: r[1])[len(row[label]) // 2]
        per_connection = 100
        row["watch h2c"] = watch_deliveries(proxy, base, ["-n", str(FANOUT), "-c", str(FANOUT // per_connection),
                                                          "-m", str(per_connection), "-t", "1"])
        row["watch h1"] = watch_deliveries(proxy, base, ["--h1", "-n", str(FANOUT), "-c", str(FANOUT), "-t", "1"])
        return row
    finally:
        procs.stop_all()


def main():
    binaries = [harness.PROXY_BIN] + sys.argv[1:]
    procs = harness.Processes()
    try:
        api = clients.start_apiserver(procs, "--enable-control")
        base = "http://127.0.0.1:%d" % api.port
        clients.control(base, "/control/load?resource=pods&count=%d&namespaces=10&nodes=50" % PODS)
        meta = json.loads(clients.request(base + "/api/v1/pods?limit=1")[1])["items"][0]["metadata"]
        rows = [(binary, bench(binary, base, meta["namespace"], meta["name"])) for binary in binaries]
    finally:
        procs.stop_all()
    print("| proxy | RSS/watch, 1 MB headers (KiB) | RSS/watch, no extra field (KiB) | GET h2c req/s, CPU µs/req "
          "| GET h1 req/s, CPU µs/req | LIST h2c ms, CPU ms/LIST | LIST h1 ms, CPU ms/LIST | LIST CPU h2c/h1 "
          "| watch h2c: deliveries, CPU µs each | watch h1: deliveries, CPU µs each |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for binary, r in rows:
        print("| %s | %.1f | %.1f | %.1fk, %.1f | %.1fk, %.1f | %.1f, %.1f | %.1f, %.1f | %.2fx | %d, %.2f | %d, %.2f |" % (
            binary, r["filler"], r["plain"], r["get h2c"][0] / 1000, r["get h2c"][1] * 1e6, r["get h1"][0] / 1000,
            r["get h1"][1] * 1e6, 1000 / r["list h2c"][0], r["list h2c"][1] * 1000, 1000 / r["list h1"][0],
            r["list h1"][1] * 1000, r["list ratio"], *r["watch h2c"], *r["watch h1"]))


if __name__ == "__main__":
    main()
