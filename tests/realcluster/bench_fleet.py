#!/usr/bin/python3
"""A node fleet direct vs through the gateway (issue 35; not a CTest test, the numbers go to
docs/benchmarks.md): N kubemark hollow nodes (fleet.py), each kubelet with its own client
certificate, against a fresh control plane, then the same fleet through the proxy in gateway
mode against another, each shape --repeat times (the order alternating) for each N:

  KCP_BIN_DIR=build/bin KCP_REALCLUSTER_BIN=$(bash scripts/realcluster-build.sh | tail -1) \\
    /usr/bin/python3 tests/realcluster/bench_fleet.py [--nodes 50,100] [--repeat 2] [--pods-per-node 5]

For each run: the time until every node is Ready; pod startup p50/p99 of a Deployment of k
pods per node (created to Running as its kubelet reports it, seen by a watcher of the
apiserver) against the SLO p99 <= 5 s; then, over a quiet --window, the apiserver's watchers
(its open WATCH requests, by resource: apiserver_registered_watchers is gone from
kube-apiserver), its requests per
minute by verb and resource, its CPU seconds per minute and RSS, and the proxy's; the kinds
of errors the fleet logged through the gateway and not directly. fs.inotify.max_user_instances
is raised for a run that needs it and restored after.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fleet  # noqa: E402
import realcluster  # noqa: E402
import workload  # noqa: E402
from bench_real import apiserver_pid, cpu_seconds  # noqa: E402

import harness  # noqa: E402

SAMPLE = re.compile(r'^(\w+)\{(.*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def metrics(plane):
    """[(name, {label: value}, value)] of the apiserver's /metrics."""
    a = plane.request("/metrics")
    assert a.status == 200, a.body[:300]
    out = []
    for line in a.body.decode().splitlines():
        m = SAMPLE.match(line)
        if m:
            out.append((m.group(1), dict(LABEL.findall(m.group(2))), float(m.group(3))))
    return out


def requests_by_verb(samples):
    """{"VERB resource[/subresource]": count} of apiserver_request_total."""
    out = {}
    for name, labels, value in samples:
        if name == "apiserver_request_total":
            resource = labels.get("resource", "") + ("/" + labels["subresource"] if labels.get("subresource") else "")
            key = "%s %s" % (labels.get("verb", ""), resource)
            out[key] = out.get(key, 0) + value
    return out


def watches(samples):
    """{resource: open WATCH requests}: apiserver_longrunning_requests, since
    apiserver_registered_watchers (the watch cache's watchers) is gone from kube-apiserver."""
    open_watches = {}
    for name, labels, value in samples:
        if name == "apiserver_longrunning_requests" and labels.get("verb") == "WATCH" and value:
            r = labels.get("resource", "")
            open_watches[r] = open_watches.get(r, 0) + int(value)
    return open_watches


def rss_mb(pid):
    return harness.rss_kib(pid) / 1024.0


def start_fleet(run, plane, nodes, gateway):
    """The fleet against the apiserver or a gateway; returns the fleet."""
    server, ca = plane.url, plane.ca
    if gateway:
        run["proxy"], server, ca = fleet.start_gateway(run["processes"], plane, run["workdir"],
                                                       "--cache-start-wait", "5s")
    run["inotify"].make_room(nodes)
    f = fleet.Fleet(run["binary"], run["workdir"], fleet.ClientCerts(plane, run["workdir"]), server, ca, "hollow")
    run["fleet"] = f
    run["started"] = time.monotonic()
    f.start(nodes)
    return f


def measure(binary, nodes, pods_per_node, gateway, window):
    """One run; returns its numbers as a dict."""
    workdir = tempfile.mkdtemp(prefix="bench-fleet-")
    run = {"binary": binary, "workdir": workdir, "processes": harness.Processes(),
           "inotify": fleet.InotifyInstances(), "proxy": None, "fleet": None}
    components = None
    try:
        plane = realcluster.ControlPlane(run["processes"], workdir)
        components = workload.Components(plane, workdir)
        f = start_fleet(run, plane, nodes, gateway)
        harness.wait_for(lambda: f.check_alive() or len(workload.ready_nodes(plane, "hollow")) == nodes,
                         timeout=600, interval=0.5, message="every node Ready")
        out = {"mode": "gateway" if gateway else "direct", "nodes": nodes,
               "ready_s": round(time.monotonic() - run["started"], 1)}
        density = workload.Density(plane)
        times = workload.PodTimes(plane, density.ns)
        try:
            density.deploy(pods_per_node * nodes)
            density.wait_running(pods_per_node * nodes, timeout=900, check=f.check_alive)
            lat = times.latencies()
        finally:
            times.close()
        out.update(pods=len(lat), pod_watch_resumed=times.resumed, startup_p50_s=round(workload.percentile(lat, 50), 2),
                   startup_p99_s=round(workload.percentile(lat, 99), 2))
        out.update(quiet_window(plane, run["proxy"], window))
        errors = f.errors()
        out["error_kinds"] = len(errors)
        out["errors"] = sorted([c, kind, n, m[:300]] for (c, kind), (n, m) in errors.items())
        return out
    finally:
        if run["fleet"]:
            run["fleet"].stop()
        if components:
            components.stop()
        run["processes"].stop_all()
        run["inotify"].restore()
        shutil.rmtree(workdir, ignore_errors=True)


def quiet_window(plane, proxy, window):
    """The apiserver's (and the proxy's) costs over `window` seconds of a running fleet."""
    pid = apiserver_pid(plane)
    before, cpu0 = metrics(plane), cpu_seconds(pid)
    proxy_cpu0 = cpu_seconds(proxy.pid) if proxy else 0.0
    t0 = time.monotonic()
    time.sleep(window)
    after, cpu1 = metrics(plane), cpu_seconds(pid)
    minutes = (time.monotonic() - t0) / 60.0
    r0, r1 = requests_by_verb(before), requests_by_verb(after)
    per_minute = {k: round((v - r0.get(k, 0)) / minutes, 1) for k, v in r1.items() if v - r0.get(k, 0) > 0}
    open_watches = watches(after)
    fleet_resources = {r.split(".")[0] for r in fleet.FLEET_CACHE.split(",")}
    out = {"watch_requests": sum(open_watches.values()),
           "fleet_watch_requests": sum(n for r, n in open_watches.items() if r in fleet_resources),
           "watches_by_resource": open_watches, "apiserver_cpu_s_per_min": round((cpu1 - cpu0) / minutes, 2),
           "apiserver_rss_mb": round(rss_mb(pid)), "requests_per_min": round(sum(per_minute.values())),
           "requests_per_min_by_verb": dict(sorted(per_minute.items(), key=lambda kv: -kv[1]))}
    if proxy:
        out.update(proxy_cpu_s_per_min=round((cpu_seconds(proxy.pid) - proxy_cpu0) / minutes, 2),
                   proxy_rss_mb=round(rss_mb(proxy.pid)))
    return out


def spread(values, fmt="%.2f"):
    """median (min-max) of the repeats."""
    if len(values) == 1:
        return fmt % values[0]
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(values), min(values), max(values))


def summarize(results):
    print("\n| nodes | shape | Ready s | pod startup p50 s | p99 s | apiserver watches: all | of the fleet's resources |"
          " apiserver CPU s/min | apiserver RSS MB | requests/min | proxy CPU s/min | proxy RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for nodes in sorted({r["nodes"] for r in results}):
        for mode in ("direct", "gateway"):
            rs = [r for r in results if r["nodes"] == nodes and r["mode"] == mode]
            if not rs:
                continue

            def col(key, fmt="%.2f"):
                return spread([r[key] for r in rs], fmt) if key in rs[0] else "-"
            print("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                nodes, mode, col("ready_s", "%.1f"), col("startup_p50_s"), col("startup_p99_s"),
                col("watch_requests", "%d"), col("fleet_watch_requests", "%d"), col("apiserver_cpu_s_per_min"),
                col("apiserver_rss_mb", "%d"), col("requests_per_min", "%d"), col("proxy_cpu_s_per_min"),
                col("proxy_rss_mb", "%d")))
    print("\nrepeats: median (min-max)")


def only_via_gateway(results):
    """Error kinds the fleet logged through the gateway and never directly."""
    direct = {(c, k) for r in results if r["mode"] == "direct" for c, k, _, _ in r["errors"]}
    return sorted({"%s: %s" % (c, m) for r in results if r["mode"] == "gateway" for c, k, _, m in r["errors"]
                   if (c, k) not in direct})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="50", help="comma-separated fleet sizes")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--pods-per-node", type=int, default=5)
    parser.add_argument("--window", type=float, default=60, help="seconds of the quiet window")
    parser.add_argument("--json", help="append each run's numbers to this file")
    args = parser.parse_args()
    binary = fleet.build_hollownode()
    results = []
    for nodes in [int(n) for n in args.nodes.split(",")]:
        for i in range(args.repeat):
            for gateway in ((False, True) if i % 2 == 0 else (True, False)):
                r = measure(binary, nodes, args.pods_per_node, gateway, args.window)
                results.append(r)
                print(json.dumps({k: v for k, v in r.items() if k != "errors"}), flush=True)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(r) + "\n")
    summarize(results)
    extra = only_via_gateway(results)
    print("\nerror kinds logged only through the gateway: %d" % len(extra))
    for e in extra:
        print("  " + e)


if __name__ == "__main__":
    main()
