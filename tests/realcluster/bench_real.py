#!/usr/bin/python3
"""Benchmarks against the real kube-apiserver (not CTest tests; the numbers go to
docs/benchmarks.md). Each scenario starts its own control plane and proxy and measures
the apiserver and the proxy in the same run.

  KCP_BIN_DIR=build/bin KCP_REALCLUSTER_BIN=$(bash scripts/realcluster-build.sh | tail -1) \\
    /usr/bin/python3 tests/realcluster/bench_real.py SCENARIO [--pods N] [--watchers N] [--clients N]

Scenarios:
  list     LIST of --pods pods (default 10,000) at RV=0 and RV unset, plain and with
           Accept-Encoding: gzip (what client-go sends): median wall time of 11 LISTs, and
           the server's CPU per LIST (utime+stime from /proc), apiserver vs proxy
  rss      RSS per cached pod: the apiserver's and the proxy's RSS growth from an empty
           namespace to --pods pods (default 100,000)
  fanout   --watchers watches (default 1,000) of one namespace's pods, --rate pods/s (10) for
           --seconds (20):
           delivery p50/p99, server CPU per delivery and RSS per watcher, apiserver vs proxy
  clients  --clients client-go informer processes (default 50) on pods while pods churn
           (5/s for 60 s): the apiserver's CPU seconds and request count, clients talking
           to it directly vs through one proxy
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import realcluster  # noqa: E402
from test_real_differential import realistic_pod  # noqa: E402

import harness  # noqa: E402


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def apiserver_pid(plane):
    with open(os.path.join(plane.dir, "kube-apiserver.pid")) as f:
        return int(f.read())


def create_pods(plane, namespace, count, threads=8):
    a = plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": namespace}})
    assert a.status in (201, 409), a.body

    def create(i):
        a = plane.request("/api/v1/namespaces/%s/pods" % namespace, "POST",
                          realistic_pod(namespace, "pod-%d" % i, "fake-node-%d" % (i % 10), i))
        assert a.status == 201, a.body
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, range(count), chunksize=64))
    print("created %d pods in %.1f s" % (count, time.monotonic() - started), flush=True)


class Endpoint:
    """A keep-alive connection to the apiserver (TLS, token) or the proxy (plain)."""

    def __init__(self, name, connect, headers):
        self.name, self.connect, self.headers = name, connect, headers
        self.conn = connect()

    def get(self, path, headers=None):
        self.conn.request("GET", path, headers=dict(self.headers, **(headers or {})))
        r = self.conn.getresponse()
        body = r.read()
        return r.status, dict(r.getheaders()), body


def bench_list(processes, workdir, pods):
    plane = realcluster.ControlPlane(processes, workdir)
    create_pods(plane, "bench", pods)
    proxy = realcluster.start_proxy(processes, plane, "--cache", "pods")
    api = Endpoint("apiserver", plane.connection, {"Authorization": "Bearer admin-token", "User-Agent": "bench"})
    px = Endpoint("proxy", lambda: http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=60),
                  {"User-Agent": "bench"})
    pids = {"apiserver": apiserver_pid(plane), "proxy": proxy.pid}
    rows = []
    for query in ("resourceVersion=0", ""):
        for gz in (False, True):
            for ep in (api, px):
                headers = {"Accept": "application/json"}
                if gz:
                    headers["Accept-Encoding"] = "gzip"
                path = "/api/v1/pods" + ("?" + query if query else "")
                status, h, body = ep.get(path, headers)  # warm
                assert status == 200, body[:200]
                times = []
                cpu0 = cpu_seconds(pids[ep.name])
                for _ in range(11):
                    t = time.monotonic()
                    status, h, body = ep.get(path, headers)
                    times.append(time.monotonic() - t)
                cpu = (cpu_seconds(pids[ep.name]) - cpu0) / 11
                plain = gzip.decompress(body) if h.get("Content-Encoding") == "gzip" else body
                items = len(json.loads(plain)["items"])
                rows.append((ep.name, query or "RV unset", "gzip" if gz else "plain", statistics.median(times) * 1000,
                             cpu * 1000, len(body) / 1e6, items, h.get("X-Kube-Cache-Proxy", "")))
    print("| server | RV | encoding | median ms | server CPU ms/LIST | MB on the wire | items | served |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %s | %.1f | %.1f | %.1f | %d | %s |" % r)


def rss_kib(pid):
    return harness.rss_kib(pid)


def bench_rss(processes, workdir, pods):
    plane = realcluster.ControlPlane(processes, workdir)
    proxy = realcluster.start_proxy(processes, plane, "--cache", "pods")
    api_pid = apiserver_pid(plane)
    a0, p0 = rss_kib(api_pid), rss_kib(proxy.pid)
    create_pods(plane, "bench", pods)
    want = pods + 6
    harness.wait_for(lambda: len(json.loads(harness.http_get("127.0.0.1", proxy.port,
                                                             "/api/v1/pods?resourceVersion=0")[2])["items"]) >= want,
                     timeout=300, interval=1, message="proxy caught up")
    time.sleep(5)  # let both settle after the burst (GC on the apiserver side)
    a1, p1 = rss_kib(api_pid), rss_kib(proxy.pid)
    body = harness.http_get("127.0.0.1", proxy.port, "/api/v1/pods?resourceVersion=0")[2]
    print("pods %d, JSON of the list %.1f MB" % (pods, len(body) / 1e6))
    print("| process | RSS before MB | RSS after MB | growth MB | KiB per pod |")
    print("|---|---|---|---|---|")
    for name, before, after in (("kube-apiserver", a0, a1), ("kube-cache-proxy", p0, p1)):
        print("| %s | %.1f | %.1f | %.1f | %.2f |" % (name, before / 1024, after / 1024, (after - before) / 1024,
                                                   (after - before) / pods))


def bench_fanout(processes, workdir, watchers, rate, seconds):
    plane = realcluster.ControlPlane(processes, workdir)
    a = plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": "bench"}})
    assert a.status == 201
    proxy = realcluster.start_proxy(processes, plane, "--cache", "pods")
    rows = []
    for name, url, token, pid in (("kube-apiserver", plane.url, "admin-token", apiserver_pid(plane)),
                                  ("kube-cache-proxy", "http://127.0.0.1:%d" % proxy.port, "", proxy.pid)):
        rss0, cpu0 = rss_kib(pid), cpu_seconds(pid)
        out = subprocess.run([realcluster.tool("watchfanout"), "--url", url, "--token", token, "--watchers",
                              str(watchers), "--rate", str(rate), "--seconds", str(seconds), "--namespace", "bench",
                              "--create-kubeconfig", plane.kubeconfig("admin")],
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        r = json.loads(out.stdout.strip().splitlines()[-1])
        cpu = cpu_seconds(pid) - cpu0
        rows.append((name, r["watchers"], r["deliveries"], r["expected"], r["p50_ms"], r["p99_ms"],
                     cpu / max(r["deliveries"], 1) * 1e6, (rss_kib(pid) - rss0) / max(r["watchers"], 1)))
        # The next run starts from an empty namespace again.
        a = plane.request("/api/v1/namespaces/bench/pods", "DELETE")
        assert a.status == 200, a.body[:300]
    print("| server | watchers | deliveries | expected | p50 ms | p99 ms | server CPU µs/delivery | RSS KiB/watcher |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d | %d | %.1f | %.1f | %.1f | %.1f |" % r)


def apiserver_metric(plane, name, match=""):
    """The sum of a metric family's samples (those whose labels contain `match`)."""
    a = plane.request("/metrics")
    total = 0.0
    for line in a.body.decode().splitlines():
        if line.startswith(name + "{") and match in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def bench_clients(processes, workdir, count):
    plane = realcluster.ControlPlane(processes, workdir)
    create_pods(plane, "bench", 1000)
    proxy = realcluster.start_proxy(processes, plane, "--cache", "pods")
    pid = apiserver_pid(plane)
    rows = []
    for protocol, env in (("watch-list (client-go default)", {}),
                          ("list+watch", {"KUBE_FEATURE_WatchListClient": "false"})):
        for name, kubeconfig in (("direct", plane.kubeconfig("admin")),
                                 ("through one proxy", realcluster.proxy_kubeconfig(workdir, proxy.port))):
            watches0 = apiserver_metric(plane, "apiserver_longrunning_requests", 'verb="WATCH"')
            req0, cpu0 = apiserver_metric(plane, "apiserver_request_total"), cpu_seconds(pid)
            procs = [subprocess.Popen([realcluster.tool("informer"), "--kubeconfig", kubeconfig],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      env=dict(os.environ, **env)) for _ in range(count)]
            patches, watches = 0, 0.0
            try:
                churn_until = time.monotonic() + 60
                while time.monotonic() < churn_until:
                    a = plane.request("/api/v1/namespaces/bench/pods/pod-%d" % (patches % 1000), "PATCH",
                                      {"metadata": {"labels": {"rev": str(patches)}}},
                                      content_type="application/merge-patch+json")
                    assert a.status == 200
                    patches += 1
                    if patches == 150:
                        watches = apiserver_metric(plane, "apiserver_longrunning_requests", 'verb="WATCH"') - watches0
                    time.sleep(0.2)
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
            # The metric requests and the churn's own patches are not the clients'.
            requests = apiserver_metric(plane, "apiserver_request_total") - req0 - patches - 2
            rows.append((protocol, name, count, requests, watches, cpu_seconds(pid) - cpu0))
    print("| informers | clients | processes | apiserver requests from the clients in 60 s | open watches at the apiserver | apiserver CPU s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %d | %d | %d | %.1f |" % r)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["list", "rss", "fanout", "clients"])
    parser.add_argument("--pods", type=int, default=0)
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rate", type=float, default=10, help="fanout: pods created per second")
    parser.add_argument("--seconds", type=float, default=20, help="fanout: for how long")
    args = parser.parse_args()
    processes = harness.Processes()
    workdir = tempfile.mkdtemp(prefix="bench-real-")
    try:
        if args.scenario == "list":
            bench_list(processes, workdir, args.pods or 10000)
        elif args.scenario == "rss":
            bench_rss(processes, workdir, args.pods or 100000)
        elif args.scenario == "fanout":
            bench_fanout(processes, workdir, args.watchers, args.rate, args.seconds)
        else:
            bench_clients(processes, workdir, args.clients)
    finally:
        processes.stop_all()
        subprocess.run(["rm", "-rf", workdir])


if __name__ == "__main__":
    main()
