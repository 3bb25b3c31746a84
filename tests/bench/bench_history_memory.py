#!/usr/bin/python3
"""Memory under churn (issue 20): the watch history's old versions, kept as received
(the build before, and this build with --store-encoding plain) or packed (--store-encoding
history; and this build's default, --store-encoding compressed, current objects too),
measured in one run against one test apiserver.

5,000 realistic pods (~4.6 KB each, with managedFields) plus the test apiserver's churn
(creates, updates, deletes of pods and configmaps at 200 changes/s) for longer than the
history window (150 s), all three proxies caching pods and configmaps. Reports RSS over
time, the history gauges, then what reading old versions back costs: an Exact LIST at an
old RV (a historical snapshot, which unpacks one previous version per changed key) and a
watch resumed from the oldest RV the window keeps (every version in it).

Not a test; the numbers go to docs/benchmarks.md.

  KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/bench_history_memory.py [BEFORE_PROXY_BIN]
  BENCH_PODS=5000 BENCH_RATE=200 BENCH_SECONDS=200 (defaults)
"""
import http.client
import json
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402
from bench_gzip_list import cpu_seconds, loaded_apiserver, rss_mb, start_proxy  # noqa: E402

PODS = int(os.environ.get("BENCH_PODS", "5000"))
RATE = int(os.environ.get("BENCH_RATE", "200"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "200"))
GAUGE = re.compile(r'^kube_cache_proxy_cache_(history_\w+|json_bytes)\{[^}]*resource="(pods|configmaps)"[^}]*\} (\S+)$')


def gauges(px):
    """Sum over pods and configmaps of the history gauges and the current JSON bytes."""
    body = harness.http_get("127.0.0.1", px.port, "/metrics", timeout=30)[2].decode()
    out = {}
    for line in body.splitlines():
        m = GAUGE.match(line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0) + float(m.group(3))
    return out


def get(px, path):
    conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=60)
    conn.request("GET", path, headers={"User-Agent": "kcp-bench"})
    resp = conn.getresponse()
    return resp.status, resp.read()


def oldest_rv(px):
    """The oldest RV a pod watch can resume from, from the 410 the apiserver words (W5)."""
    conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=60)
    conn.request("GET", "/api/v1/pods?watch=1&resourceVersion=1", headers={"User-Agent": "kcp-bench"})
    body = conn.getresponse().readline().decode()
    return int(re.search(r"too old resource version: 1 \((\d+)\)", body).group(1))


def resume(px, rv, until_rv):
    """Seconds and events to replay a pod watch from `rv` up to an event at >= until_rv."""
    conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=60)
    start = time.monotonic()
    conn.request("GET", "/api/v1/pods?watch=1&resourceVersion=%d" % rv, headers={"User-Agent": "kcp-bench"})
    resp = conn.getresponse()
    events = 0
    while True:
        line = resp.readline()
        if not line:
            break
        events += 1
        m = re.search(rb'"resourceVersion":"(\d+)"', line)
        if m and int(m.group(1)) >= until_rv:
            break
    seconds = time.monotonic() - start
    conn.close()
    return seconds, events


def main():
    before_bin = sys.argv[1] if len(sys.argv) > 1 else None  # optional
    procs = harness.Processes()
    try:
        base = loaded_apiserver(procs, PODS)
        proxies = []
        for label, binary, extra in (("before", before_bin, None),
                                     ("plain", harness.PROXY_BIN, ["--store-encoding", "plain"]),
                                     ("history", harness.PROXY_BIN, ["--store-encoding", "history"]),
                                     ("compressed", harness.PROXY_BIN, [])):  # the default (issue 37)
            if binary is None:
                continue
            extra = extra or []
            px = start_proxy(procs, binary, base, ["--cache", "pods,configmaps", "--cache-on-demand=false"] + extra)
            proxies.append((label, px))
        json_mb = gauges(proxies[-2][1]).get("json_bytes", 0) / 1e6
        print("%d pods, %.1f MB of JSON cached; churn %d changes/s for %d s (history window 150 s)" % (
            PODS, json_mb, RATE, SECONDS))
        print("t=0     " + "  ".join("%s %.1f MB" % (label, rss_mb(px.pid)) for label, px in proxies))
        cpu0 = {label: cpu_seconds(px.pid) for label, px in proxies}
        clients.control(base, "/control/churn?rate=%d&seconds=%d" % (RATE, SECONDS))
        start = time.monotonic()
        while time.monotonic() - start < SECONDS:
            time.sleep(20)
            print("t=%-4d  " % (time.monotonic() - start) +
                  "  ".join("%s %.1f MB" % (label, rss_mb(px.pid)) for label, px in proxies))
        for label, px in proxies:
            g = gauges(px)
            print("%-7s RSS %.1f MB; proxy CPU during the churn %.1f s; history: %d events, %.1f MB plain JSON, "
                  "%d versions packed in %.1f MB" % (
                      label, rss_mb(px.pid), cpu_seconds(px.pid) - cpu0[label], g.get("history_events", 0),
                      g.get("history_json_bytes", 0) / 1e6, g.get("history_packed_versions", 0),
                      g.get("history_packed_bytes", 0) / 1e6))
        # Reading old versions back, after the churn ended (the caches are all at one RV).
        # A resume reads until the newest pod it lists (later events may be deletions).
        items = json.loads(get(proxies[0][1], "/api/v1/pods?resourceVersion=0")[1])["items"]
        current = max(int(i["metadata"]["resourceVersion"]) for i in items)
        for label, px in proxies:
            oldest = oldest_rv(px)
            exact = []
            for k in range(5):  # distinct RVs: a historical snapshot is cached per RV
                rv = oldest + 1 + k * 97
                t = time.monotonic()
                status, body = get(px, "/api/v1/pods?resourceVersion=%d&resourceVersionMatch=Exact" % rv)
                exact.append(time.monotonic() - t)
                assert status == 200, body[:200]
            cpu = cpu_seconds(px.pid)
            seconds, events = resume(px, oldest, current)
            print("%-7s Exact LIST of %d pods at an old RV: median %.0f ms; watch resumed from the window's "
                  "start: %d events in %.2f s, proxy CPU %.2f s" % (
                      label, PODS, sorted(exact)[2] * 1000, events, seconds, cpu_seconds(px.pid) - cpu))
            # A herd: 10 watches resumed from the same RV at once.
            cpu = cpu_seconds(px.pid)
            start = time.monotonic()
            herd = [threading.Thread(target=resume, args=(px, oldest, current)) for _ in range(10)]
            for t in herd:
                t.start()
            for t in herd:
                t.join()
            print("%-7s 10 such resumes at once: %.2f s, proxy CPU %.2f s" % (
                label, time.monotonic() - start, cpu_seconds(px.pid) - cpu))
    finally:
        procs.stop_all()


if __name__ == "__main__":
    main()
