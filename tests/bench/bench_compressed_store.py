#!/usr/bin/python3
"""Current objects packed (issue 20, --store-encoding compressed) vs the default (history),
one run, one test apiserver, both proxies side by side:

1. RSS once synced and packed, against the JSON bytes cached, and how long the packing of
   every pod took after the sync (the packed-objects gauge reaching the pod count);
2. LIST of every pod at RV=0 (curl): the first after the packer's pass (every object
   inflated), then a wrk loop of one connection (objects inflated about once a second);
3. GET of one pod, wrk with 64 connections: req/s and proxy CPU per GET;
4. RSS after the LISTs, once the packer has cooled what they inflated.

Not a test; the numbers go to docs/benchmarks.md.

  KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/bench_compressed_store.py
  BENCH_PODS=10000 BENCH_SECONDS=10 (defaults)
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from bench_cached_read import wrk  # noqa: E402
from bench_gzip_list import cpu_seconds, curl, loaded_apiserver, rss_mb, start_proxy  # noqa: E402

PODS = int(os.environ.get("BENCH_PODS", "10000"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
LIST_PATH = "/api/v1/pods?resourceVersion=0"
GAUGE = re.compile(r'^kube_cache_proxy_cache_(packed_objects|packed_bytes|json_bytes)\{[^}]*resource="pods"[^}]*\} (\S+)$')


def gauges(px):
    body = harness.http_get("127.0.0.1", px.port, "/metrics", timeout=30)[2].decode()
    return {m.group(1): float(m.group(2)) for m in map(GAUGE.match, body.splitlines()) if m}


def main():
    procs = harness.Processes()
    try:
        base = loaded_apiserver(procs, PODS)
        proxies = []
        for label, args in (("history", []), ("compressed", ["--store-encoding", "compressed"])):
            start = time.monotonic()
            px = start_proxy(procs, harness.PROXY_BIN, base, ["--cache", "pods", "--cache-on-demand=false"] + args)
            harness.wait_for(lambda: gauges(px).get("json_bytes", 0) > 0, timeout=60, interval=0.1, message="synced")
            synced = time.monotonic() - start
            if args:
                harness.wait_for(lambda: gauges(px).get("packed_objects", 0) >= PODS, timeout=120, interval=0.1,
                                 message="every pod packed")
            packed = time.monotonic() - start - synced
            time.sleep(2)  # a packer tick after the last batch, so RSS has settled
            g = gauges(px)
            print("%-10s synced in %.1f s, packed in %.1f s more; %d pods, %.1f MB of JSON, %.1f MB deflated; "
                  "RSS %.1f MB, CPU %.2f s" % (label, synced, packed if args else 0, PODS, g.get("json_bytes", 0) / 1e6,
                                               g.get("packed_bytes", 0) / 1e6, rss_mb(px.pid), cpu_seconds(px.pid)))
            proxies.append((label, px))

        pod = None
        for label, px in proxies:
            url = "http://127.0.0.1:%d%s" % (px.port, LIST_PATH)
            cpu0 = cpu_seconds(px.pid)
            first, size = curl(url, False)
            print("%-10s first LIST: %.1f ms (%.1f MB), proxy CPU %.0f ms" % (
                label, first * 1000, size / 1e6, (cpu_seconds(px.pid) - cpu0) * 1000))
            cpu0 = cpu_seconds(px.pid)
            rps, total, _, err = wrk(url, 1, 1, SECONDS)
            print("%-10s LIST loop: %.1f ms per LIST (%d in %d s), proxy CPU %.1f ms per LIST%s" % (
                label, 1000 / rps, total, SECONDS, (cpu_seconds(px.pid) - cpu0) * 1000 / total,
                "  [" + err + "]" if err else ""))
            if pod is None:
                item = json.loads(subprocess.run(["curl", "-s", "-A", "kcp-bench", url + "&limit=1"], capture_output=True,
                                                 check=True).stdout)["items"][0]["metadata"]
                pod = "/api/v1/namespaces/%s/pods/%s?resourceVersion=0" % (item["namespace"], item["name"])
            get_url = "http://127.0.0.1:%d%s" % (px.port, pod)
            wrk(get_url, 64, 2, 2)
            cpu0 = cpu_seconds(px.pid)
            rps, total, _, err = wrk(get_url, 64, 2, SECONDS)
            print("%-10s GET of one pod: %.0f req/s, proxy CPU %.1f us per GET%s" % (
                label, rps, (cpu_seconds(px.pid) - cpu0) * 1e6 / total, "  [" + err + "]" if err else ""))
        time.sleep(3)  # the packer cools what the LISTs inflated
        print("RSS after the LISTs, cooled: " + ", ".join("%s %.1f MB" % (label, rss_mb(px.pid)) for label, px in proxies))
    finally:
        procs.stop_all()


if __name__ == "__main__":
    main()
