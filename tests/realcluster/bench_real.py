#!/usr/bin/python3
"""Benchmarks against the real kube-apiserver (not CTest tests; the numbers go to
docs/benchmarks.md). Each scenario starts its own control plane and proxy and measures
the apiserver and the proxy in the same run.

  KCP_BIN_DIR=build/bin KCP_REALCLUSTER_BIN=$(bash scripts/realcluster-build.sh | tail -1) \\
    /usr/bin/python3 tests/realcluster/bench_real.py SCENARIO [--pods N] [--watchers N] [--clients N]

Scenarios:
  list     LIST of --pods pods (default 10,000) at RV=0 and RV unset, plain and with
           Accept-Encoding: gzip (what client-go sends): median wall time of 11 LISTs, and
           the server's CPU per LIST (utime+stime from /proc), apiserver vs proxy; with
           --churn the pods idle while other resources move (issue 34)
  rss      RSS per cached pod: the apiserver's and the proxy's RSS growth from an empty
           namespace to --pods pods (default 100,000)
  rss-protobuf  RSS per cached pod in JSON and in protobuf (issue 18): the proxy's growth
           as its JSON cache of --pods pods (default 100,000) syncs, then as a protobuf cache
           of the same pods syncs beside it; with the caches' own byte counts from /metrics
  fanout   --watchers watches (default 1,000) of one namespace's pods, --rate pods/s (10) for
           --seconds (20):
           delivery p50/p99, server CPU per delivery and RSS per watcher, apiserver vs proxy
  fanout-http2  issue 18: --watchers watches (10,000 in docs/benchmarks.md) through the gateway (TLS,
           token) as --watchers/10 client processes of 10 watches each: over HTTP/1.1 (one
           connection per watch) vs over HTTP/2 (one connection per process), --rate pods/s
           for --seconds: the proxy's open connections, RSS growth, CPU per delivery, p50/p99;
           with --baseline BINARY that proxy build's HTTP/2 row too, in the same run
  clients  --clients client-go informer processes (default 50) on pods while pods churn
           (5/s for 60 s): the apiserver's CPU seconds and request count, clients talking
           to it directly vs through one proxy
  freshness  idle resources while the cluster churns (100 fake nodes renewing Leases every
           10 s, Events; issue #15), direct vs through one proxy: --clients client-go
           watch-list informer processes (default 100) over 5 idle resources with the
           consistency detector on (sync time, upstream watches, detector failures);
           --watchers RV-unset watches of configmaps (default 100); GET/LIST at a secret
           write's RV; consistent GETs from 50 clients at up to 1,000/s (throughput, upstream
           requests per read); RV-unset LISTs of the idle configmaps under the strict and
           the cache read policies (share from memory, latency, staleness)
"""
import argparse
import concurrent.futures
import gzip
import http.client
import json
import os
import ssl
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


def bench_list(processes, workdir, pods, churn=False):
    plane = realcluster.ControlPlane(processes, workdir)
    create_pods(plane, "bench", pods)
    if churn:  # other resources move (Leases of 100 fake nodes, Events) while the pods idle
        plane.churn(nodes=100, events=2)
    proxy = realcluster.start_proxy(processes, plane, "--cache", "pods")
    if churn:
        time.sleep(12)  # the churn's first Lease round; the pods' store has been idle since
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


def cache_metrics(port, resource):
    """{(family, encoding): value} of the per-resource cache gauges for `resource`."""
    out = {}
    for line in harness.http_get("127.0.0.1", port, "/metrics")[2].decode().splitlines():
        if not line.startswith("kube_cache_proxy_cache_") or 'resource="%s"' % resource not in line:
            continue
        name = line.split("{", 1)[0]
        encoding = line.split('encoding="', 1)[1].split('"', 1)[0]
        out[(name, encoding)] = float(line.rsplit(" ", 1)[1])
    return out


def bench_rss_protobuf(processes, workdir, pods):
    plane = realcluster.ControlPlane(processes, workdir)
    proxy = realcluster.start_proxy(processes, plane, "--cache", "pods")
    p0 = rss_kib(proxy.pid)
    create_pods(plane, "bench", pods)
    want = pods + 6
    harness.wait_for(lambda: len(json.loads(harness.http_get("127.0.0.1", proxy.port,
                                                             "/api/v1/pods?resourceVersion=0")[2])["items"]) >= want,
                     timeout=600, interval=1, message="JSON cache caught up")
    time.sleep(5)
    p1 = rss_kib(proxy.pid)
    accept = {"Accept": "application/vnd.kubernetes.protobuf, */*"}

    def protobuf_synced():
        status, headers, body = harness.http_get("127.0.0.1", proxy.port, "/api/v1/pods?resourceVersion=0",
                                                 headers=accept, timeout=120)
        return (status == 200 and headers.get("Content-Type") == "application/vnd.kubernetes.protobuf" and
                cache_metrics(proxy.port, "pods").get(("kube_cache_proxy_cache_objects", "protobuf"), 0) >= want
                and body)
    started = time.monotonic()
    protobuf_body = harness.wait_for(protobuf_synced, timeout=600, interval=1, message="protobuf cache synced")
    synced_after = time.monotonic() - started
    time.sleep(5)
    p2 = rss_kib(proxy.pid)
    json_body = harness.http_get("127.0.0.1", proxy.port, "/api/v1/pods?resourceVersion=0")[2]
    m = cache_metrics(proxy.port, "pods")
    print("pods %d: LIST body JSON %.1f MB, protobuf %.1f MB (%.2fx); protobuf cache synced %.1f s after its "
          "first request" % (pods, len(json_body) / 1e6, len(protobuf_body) / 1e6,
                             len(json_body) / len(protobuf_body), synced_after))
    print("| cache | objects | stored bytes MB | overhead MB | proxy RSS growth MB | KiB per pod | RSS / stored bytes |")
    print("|---|---|---|---|---|---|---|")
    for encoding, before, after in (("json", p0, p1), ("protobuf", p1, p2)):
        stored = m.get(("kube_cache_proxy_cache_json_bytes", encoding), 0)
        print("| %s | %d | %.1f | %.1f | %.1f | %.2f | %.2f |" % (
            encoding, m.get(("kube_cache_proxy_cache_objects", encoding), 0), stored / 1e6,
            m.get(("kube_cache_proxy_cache_overhead_bytes", encoding), 0) / 1e6, (after - before) / 1024,
            (after - before) / pods, (after - before) * 1024 / stored if stored else 0))


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


def bench_fanout_http2(processes, workdir, watchers, rate, seconds, baseline=None):
    plane = realcluster.ControlPlane(processes, workdir)
    a = plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": "bench"}})
    assert a.status == 201
    pki = harness.make_pki(workdir)
    context = ssl.create_default_context(cafile=pki["ca"])
    rows = []
    runs = [("HTTP/1.1", None), ("HTTP/2", None)] + ([("HTTP/2 (%s)" % baseline, baseline)] if baseline else [])
    for protocol, binary in runs:
        # A fresh gateway each time, so that RSS and CPU are this protocol's alone.
        proxy = realcluster.start_proxy(processes, plane, "--mode", "gateway", "--tls-cert-file", pki["server_cert"],
                                        "--tls-private-key-file", pki["server_key"], "--cache", "pods",
                                        "--max-connections", "0", who="proxy", tls=context, binary=binary)

        def open_connections():
            conn = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=context, timeout=30)
            conn.request("GET", "/metrics", headers={"Authorization": "Bearer admin-token"})
            body = conn.getresponse().read().decode()
            conn.close()
            for line in body.splitlines():
                if line.startswith("kube_cache_proxy_open_connections "):
                    return int(float(line.split()[1])) - 1  # this scrape
            return -1

        rss0, cpu0 = rss_kib(proxy.pid), cpu_seconds(proxy.pid)
        ready_file = os.path.join(workdir, "watches-ready")
        if os.path.exists(ready_file):
            os.remove(ready_file)
        argv = [realcluster.tool("watchfanout"), "--url", "https://127.0.0.1:%d" % proxy.port, "--token",
                "admin-token", "--watchers", str(watchers), "--rate", str(rate), "--seconds", str(seconds),
                "--namespace", "bench", "--create-kubeconfig", plane.kubeconfig("admin"), "--ready-file", ready_file]
        if protocol.startswith("HTTP/2"):
            argv += ["--http2", "--per-connection", "10"]
        fanout = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The connections while the events are delivered: the last sample before the run ends
        # (Go's transport may dial once per request before its first HTTP/2 handshake ends,
        # and closes the extra connections at once).
        # RSS: the peak (which holds the connections Go dials at once at the start, closed
        # as soon as its first HTTP/2 handshake ends) and the last sample before the run
        # ends, while events are delivered.
        peak = {"connections": 0, "rss": 0, "settled": 0}
        # CPU from the moment every watch has its answer: the delivery phase alone, without
        # the TLS handshakes and the watches' start.
        while fanout.poll() is None and not os.path.exists(ready_file):
            time.sleep(0.05)
        cpu_ready = cpu_seconds(proxy.pid)
        while fanout.poll() is None:
            time.sleep(2)
            try:
                connections = open_connections()
                if fanout.poll() is None:
                    peak["connections"] = connections
            except OSError:
                pass
            rss = rss_kib(proxy.pid)
            peak["rss"] = max(peak["rss"], rss)
            if fanout.poll() is None:
                peak["settled"] = rss
        out, err = fanout.communicate()
        assert fanout.returncode == 0, err[-2000:]
        r = json.loads(out.strip().splitlines()[-1])
        cpu = cpu_seconds(proxy.pid) - cpu0
        delivering = cpu_seconds(proxy.pid) - cpu_ready
        rows.append((protocol, r["watchers"], r["http2_watches"], peak["connections"], r["deliveries"], r["expected"],
                     r["p50_ms"], r["p99_ms"], cpu / max(r["deliveries"], 1) * 1e6,
                     delivering / max(r["deliveries"], 1) * 1e6, r["events"], delivering / max(r["events"], 1) * 1e6,
                     (peak["rss"] - rss0) / 1024, (peak["settled"] - rss0) / max(r["watchers"], 1)))
        proxy.stop()
        a = plane.request("/api/v1/namespaces/bench/pods", "DELETE")
        assert a.status == 200, a.body[:300]
    print("| protocol | watches | over HTTP/2 | proxy connections (during delivery) | deliveries | expected | p50 ms | p99 ms "
          "| proxy CPU µs/delivery, whole run | the same, delivery phase | events written | proxy CPU µs/event, "
          "delivery phase | proxy RSS growth MB, peak | RSS KiB/watch during delivery |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %d | %.1f | %.1f | %.1f |" % r)


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


IDLE = ["configmaps", "secrets", "services", "serviceaccounts", "limitranges"]


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))] if values else float("nan")


class Client:
    """One keep-alive connection to the apiserver (admin token) or the proxy (plain HTTP)."""

    def __init__(self, plane, proxy_port=None):
        if proxy_port:
            self.conn = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=60)
            self.headers = {"Accept": "application/json"}
        else:
            self.conn = plane.connection()
            self.headers = {"Accept": "application/json", "Authorization": "Bearer admin-token"}

    def get(self, path):
        started = time.monotonic()
        self.conn.request("GET", path, headers=self.headers)
        r = self.conn.getresponse()
        body = r.read()
        return r.status, (time.monotonic() - started) * 1000, r.getheader("X-Kube-Cache-Proxy", ""), \
            r.getheader("X-Kube-Cache-Proxy-Staleness"), body


def watch_count(plane, resource):
    return apiserver_metric(plane, "apiserver_longrunning_requests", 'resource="%s"' % resource)


def bench_freshness(processes, workdir, informers, watchers):
    plane = realcluster.ControlPlane(processes, workdir)
    plane.churn(nodes=100, events=2)
    proxy = realcluster.start_proxy(processes, plane, "--cache", ",".join(IDLE + ["leases.coordination.k8s.io"]),
                                    "--cache-on-demand=false")
    cache_proxy = realcluster.start_proxy(processes, plane, "--cache", "configmaps", "--cache-on-demand=false",
                                          "--read-policy", "cache")
    time.sleep(12)  # the churn's first Lease round
    targets = (("direct", plane.kubeconfig("admin"), None),
               ("through one proxy", realcluster.proxy_kubeconfig(workdir, proxy.port), proxy.port))

    print("## %d client-go watch-list informers over %s (consistency detector on)\n" % (informers, ", ".join(IDLE)))
    print("| clients | sync p50 s | sync p99 s | synced | detector failures | upstream watches of these resources |")
    print("|---|---|---|---|---|---|")
    for name, kubeconfig, _ in targets:
        before = sum(watch_count(plane, r) for r in IDLE)
        env = dict(os.environ, KUBE_WATCHLIST_INCONSISTENCY_DETECTOR="true")
        procs = [subprocess.Popen([realcluster.tool("informer"), "--kubeconfig", kubeconfig, "--resources", ",".join(IDLE)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                  text=True) for _ in range(informers)]
        syncs, failures = [], 0
        try:
            for p in procs:
                line = p.stdout.readline()
                if line:
                    syncs.append(json.loads(line)["seconds"])
            time.sleep(15)  # detector checks run after syncs; a failure ends the process
            failures = sum(1 for p in procs if p.poll() is not None)
            watches = sum(watch_count(plane, r) for r in IDLE) - before
        finally:
            for p in procs:
                p.kill()
                p.wait()
        print("| %s | %.2f | %.2f | %d of %d | %d | %d |" % (name, percentile(syncs, 0.5), percentile(syncs, 0.99),
                                                            len(syncs), informers, failures, watches))

    print("\n## %d RV-unset watches of configmaps (what python-kubernetes' watch.stream sends)\n" % watchers)
    print("| clients | upstream configmap watches | got the state | got the live event once |")
    print("|---|---|---|---|")
    for name, _, port in targets:
        before = watch_count(plane, "configmaps")
        state = plane.request("/api/v1/configmaps").json()["items"]
        conns = []
        for _ in range(watchers):
            c = Client(plane, port)
            c.conn.request("GET", "/api/v1/configmaps?watch=true", headers=c.headers)
            conns.append(c.conn.getresponse())
        time.sleep(2)
        watches = max(0, watch_count(plane, "configmaps") - before)  # the proxy's own may have restarted
        name_cm = "fresh-%d" % time.monotonic_ns()
        a = plane.request("/api/v1/namespaces/default/configmaps", "POST", {"metadata": {"name": name_cm}})
        assert a.status == 201, a.body
        got_state = got_once = 0
        for r in conns:
            names = []
            while True:
                line = r.readline()
                if not line:
                    break
                event = json.loads(line)
                names.append(event["object"]["metadata"]["name"])
                if event["object"]["metadata"]["name"] == name_cm:
                    break
            got_state += set(i["metadata"]["name"] for i in state) <= set(names)
            got_once += names.count(name_cm) == 1
            r.close()
        plane.request("/api/v1/namespaces/default/configmaps/" + name_cm, "DELETE")
        print("| %s | %d | %d of %d | %d of %d |" % (name, watches, got_state, watchers, got_once, watchers))

    print("\n## GET/LIST of idle configmaps at a secret write's RV (200 rounds)\n")
    print("| clients | p50 ms | p99 ms | from memory |")
    print("|---|---|---|---|")
    lat = {"direct": [], "through one proxy": []}
    cached = 0
    clients = {"direct": Client(plane), "through one proxy": Client(plane, proxy.port)}
    for i in range(200):
        rv = plane.request("/api/v1/namespaces/default/secrets", "POST",
                           {"metadata": {"generateName": "s-"}}).json()["metadata"]["resourceVersion"]
        for path in ("/api/v1/namespaces/default/configmaps/configmap-0?resourceVersion=" + rv,
                     "/api/v1/namespaces/default/configmaps?resourceVersion=" + rv):
            for name, c in clients.items():
                status, ms, served, _, body = c.get(path)
                assert status == 200, body[:300]
                lat[name].append(ms)
                cached += name != "direct" and served.startswith("cache")
    for name, v in lat.items():
        print("| %s | %.1f | %.1f | %s |" % (name, percentile(v, 0.5), percentile(v, 0.99),
                                             "%d of %d" % (cached, len(v)) if name != "direct" else "-"))

    print("\n## Consistent GETs of a configmap, 50 clients, at most 1,000/s in all, 20 s\n")
    print("| clients | reads/s | p50 ms | p99 ms | upstream requests per read |")
    print("|---|---|---|---|---|")
    for name, _, port in targets:
        lat, stop = [], time.monotonic() + 20
        req0 = apiserver_metric(plane, "apiserver_request_total")

        def run():
            c, out = Client(plane, port), []
            next_at = time.monotonic()
            while time.monotonic() < stop:
                status, ms, _, _, body = c.get("/api/v1/namespaces/default/configmaps/configmap-0")
                assert status == 200, body[:300]
                out.append(ms)
                next_at += 0.05  # 20/s per client
                time.sleep(max(0.0, next_at - time.monotonic()))
            return out
        with concurrent.futures.ThreadPoolExecutor(50) as pool:
            for out in pool.map(lambda _: run(), range(50)):
                lat.extend(out)
        upstream = apiserver_metric(plane, "apiserver_request_total") - req0 - 2
        direct_reads = len(lat) if port is None else 0
        print("| %s | %.0f | %.1f | %.1f | %.3f |" % (name, len(lat) / 20, percentile(lat, 0.5), percentile(lat, 0.99),
                                                     (upstream - direct_reads) / len(lat) if port else 1.0))

    print("\n## RV-unset LISTs of the idle configmaps of one namespace (300 each, a secret write before each)\n")
    print("| policy | from memory | p50 ms | p99 ms | staleness p99 s |")
    print("|---|---|---|---|---|")
    for name, port in (("direct", None), ("strict (default)", proxy.port), ("cache", cache_proxy.port)):
        c, lat, cached, stale = Client(plane, port), [], 0, []
        for i in range(300):
            plane.request("/api/v1/namespaces/default/secrets", "POST", {"metadata": {"generateName": "s-"}})
            status, ms, served, staleness, body = c.get("/api/v1/namespaces/default/configmaps")
            assert status == 200, body[:300]
            lat.append(ms)
            cached += served.startswith("cache")
            if staleness is not None:
                stale.append(float(staleness))
        print("| %s | %s | %.1f | %.1f | %s |" % (name, "-" if port is None else "%d of 300" % cached,
                                                 percentile(lat, 0.5), percentile(lat, 0.99),
                                                 "%.1f" % percentile(stale, 0.99) if stale else "-"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["list", "rss", "rss-protobuf", "fanout", "fanout-http2", "clients",
                                             "freshness"])
    parser.add_argument("--pods", type=int, default=0)
    parser.add_argument("--churn", action="store_true", help="list: other resources move while the pods idle")
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rate", type=float, default=10, help="fanout: pods created per second")
    parser.add_argument("--seconds", type=float, default=20, help="fanout: for how long")
    parser.add_argument("--baseline", help="fanout-http2: another proxy binary, measured over HTTP/2 too")
    args = parser.parse_args()
    processes = harness.Processes()
    workdir = tempfile.mkdtemp(prefix="bench-real-")
    try:
        if args.scenario == "list":
            bench_list(processes, workdir, args.pods or 10000, args.churn)
        elif args.scenario == "rss":
            bench_rss(processes, workdir, args.pods or 100000)
        elif args.scenario == "rss-protobuf":
            bench_rss_protobuf(processes, workdir, args.pods or 100000)
        elif args.scenario == "fanout-http2":
            bench_fanout_http2(processes, workdir, args.watchers, args.rate, args.seconds, args.baseline)
        elif args.scenario == "fanout":
            bench_fanout(processes, workdir, args.watchers, args.rate, args.seconds)
        elif args.scenario == "freshness":
            bench_freshness(processes, workdir, args.clients if args.clients != 50 else 100,
                            args.watchers if args.watchers != 1000 else 100)
        else:
            bench_clients(processes, workdir, args.clients)
    finally:
        processes.stop_all()
        subprocess.run(["rm", "-rf", workdir])


if __name__ == "__main__":
    main()
