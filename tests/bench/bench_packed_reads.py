#!/usr/bin/python3
"""Reads of a compressed store (issue 37): what they cost in time and memory against the
plain store, one run, one test apiserver with BENCH_PODS generated pods, one proxy per
store encoding (BENCH_ENCODINGS, default "plain compressed") caching pods:

1. RSS growth once synced and settled (packed: the packed-objects gauge at the pod count,
   then 2 s), over the same proxy caching an empty collection (a second, empty apiserver);
2. LIST of every pod at RV=0 by curl: the first after packing, then the median of 14 in a
   row, and the RSS growth right after those 14;
3. 10 LISTs held open and never read (a receive window of 4 KiB each): the largest RSS
   growth while they are held;
4. gzip'd LIST: the first (which makes the kept runs) and the median of 11;
5. GET of one pod, wrk -c64: req/s against nginx serving the same bytes, 3 alternating
   rounds, and each one's CPU per GET.

Not a test; the numbers go to docs/benchmarks.md.

  KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/bench_packed_reads.py
  BENCH_PODS=10000 BENCH_SECONDS=10 BENCH_ENCODINGS="plain compressed" (defaults)
  BENCH_GET_ONLY=1: only the GETs, nginx and each store in turn, round after round
"""
import json
import os
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402
from bench_cached_read import Nginx, wrk  # noqa: E402
from bench_compressed_store import gauges  # noqa: E402
from bench_gzip_list import cpu_seconds, curl, loaded_apiserver, rss_mb, start_proxy  # noqa: E402

PODS = int(os.environ.get("BENCH_PODS", "10000"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
ENCODINGS = os.environ.get("BENCH_ENCODINGS", "plain compressed").split()
GET_ONLY = os.environ.get("BENCH_GET_ONLY") == "1"  # only step 5, both stores alive, rounds interleaved
LIST_PATH = "/api/v1/pods?resourceVersion=0"
HELD = 10


def settled_rss(px, seconds=2.0):
    time.sleep(seconds)
    return rss_mb(px.pid)


def proxy_for(procs, base, encoding, pods):
    # --gzip-loopback: a loopback client asking for gzip gets it, from the kept runs.
    args = ["--cache", "pods", "--cache-on-demand=false", "--gzip-loopback", "--store-encoding", encoding]
    px = start_proxy(procs, harness.PROXY_BIN, base, args)
    if pods:
        harness.wait_for(lambda: gauges(px).get("json_bytes", 0) > 0, timeout=120, interval=0.1, message="synced")
    if pods and encoding == "compressed":
        harness.wait_for(lambda: gauges(px).get("packed_objects", 0) >= pods, timeout=120, interval=0.1,
                         message="every pod packed")
    return px


def median(values):
    return sorted(values)[len(values) // 2]


def held_lists(px, rss0):
    """Opens HELD LISTs that are never read; returns (largest RSS growth MB while held,
    statuses seen)."""
    request = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: kcp-bench-held\r\n\r\n" % LIST_PATH).encode()
    socks = []
    try:
        for _ in range(HELD):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", px.port))
            s.sendall(request)
            socks.append(s)
        peak = 0.0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            peak = max(peak, rss_mb(px.pid) - rss0)
            time.sleep(0.1)
        statuses = []
        for s in socks:
            s.settimeout(5)
            head = s.recv(16, socket.MSG_PEEK)
            statuses.append(head[9:12].decode() if head.startswith(b"HTTP/1.1") else repr(head))
        return peak, statuses
    finally:
        for s in socks:
            s.close()


def measure_lists(label, px, json_mb, rss0):
    url = "http://127.0.0.1:%d%s" % (px.port, LIST_PATH)
    cpu0 = cpu_seconds(px.pid)
    first, size = curl(url, False)
    print("%-10s first LIST after packing: %.1f ms (%.1f MB), proxy CPU %.0f ms" % (
        label, first * 1000, size / 1e6, (cpu_seconds(px.pid) - cpu0) * 1000))
    cpu0 = cpu_seconds(px.pid)
    times = [curl(url, False)[0] for _ in range(14)]
    after = rss_mb(px.pid) - rss0
    list_cpu = (cpu_seconds(px.pid) - cpu0) / 14
    print("%-10s 14 LISTs: median %.1f ms, proxy CPU %.1f ms per LIST; RSS growth right after %.1f MB = %.2fx the "
          "JSON" % (label, median(times) * 1000, list_cpu * 1000, after, after / json_mb))
    settled = settled_rss(px, 3) - rss0
    peak, statuses = held_lists(px, rss0)
    print("%-10s %d held LISTs (statuses %s): largest RSS growth %.1f MB = %.2fx the JSON (%.1f MB before)" % (
        label, HELD, ",".join(statuses), peak, peak / json_mb, settled))
    cpu0 = cpu_seconds(px.pid)
    after_held = settled_rss(px, 2) - rss0
    print("%-10s 2 s after the held LISTs closed: RSS growth %.1f MB, proxy CPU %.0f ms" % (
        label, after_held, (cpu_seconds(px.pid) - cpu0) * 1000))
    cpu0 = cpu_seconds(px.pid)
    first_gz, gz_size = curl(url, True)
    first_gz_cpu = cpu_seconds(px.pid) - cpu0
    cpu0 = cpu_seconds(px.pid)
    gz = [curl(url, True)[0] for _ in range(11)]
    gz_cpu = (cpu_seconds(px.pid) - cpu0) / 11
    print("%-10s gzip'd LIST: first %.1f ms (proxy CPU %.0f ms, makes the runs), median %.1f ms, proxy CPU %.1f ms "
          "per LIST (%.1f MB)" % (label, first_gz * 1000, first_gz_cpu * 1000, median(gz) * 1000, gz_cpu * 1000,
                                  gz_size / 1e6))
    return {"first": first, "list": median(times), "gzip": median(gz), "list_cpu": list_cpu, "gzip_cpu": gz_cpu}


def measure_get(label, px, nginx):
    proxy_url = "http://127.0.0.1:%d%s" % (px.port, POD_PATH[0])
    nginx_url = "http://127.0.0.1:%d/pod.json" % nginx.port
    wrk(proxy_url, 64, 2, 2)
    ratios = []
    for _ in range(3):  # alternating with nginx; the median of the rounds' ratios
        nginx_cpu0 = sum(cpu_seconds(pid) for pid in nginx.pids())
        nginx_rps, nginx_total, _, _ = wrk(nginx_url, 64, 2, SECONDS)
        nginx_cpu = (sum(cpu_seconds(pid) for pid in nginx.pids()) - nginx_cpu0) / nginx_total
        cpu0 = cpu_seconds(px.pid)
        rps, total, _, err = wrk(proxy_url, 64, 2, SECONDS)
        cpu = (cpu_seconds(px.pid) - cpu0) / total
        ratios.append(rps / nginx_rps)
        print("%-10s GET of one pod: %.0f req/s (nginx %.0f, %.2fx), CPU per GET proxy %.1f us, nginx %.1f us%s" % (
            label, rps, nginx_rps, rps / nginx_rps, cpu * 1e6, nginx_cpu * 1e6, "  [" + err + "]" if err else ""))
    return median(ratios)


POD_PATH = [None]


def get_rounds(proxies, nginx):
    """nginx, then each store, 3 rounds: the stores' req/s side by side under one load."""
    nginx_url = "http://127.0.0.1:%d/pod.json" % nginx.port
    ratios = {label: [] for label in proxies}
    for _ in range(3):
        nginx_rps = wrk(nginx_url, 64, 2, SECONDS)[0]
        for label, px in proxies.items():
            rps, total, _, _ = wrk("http://127.0.0.1:%d%s" % (px.port, POD_PATH[0]), 64, 2, SECONDS)
            ratios[label].append(rps / nginx_rps)
            print("%-10s GET of one pod: %.0f req/s, nginx %.0f just before (%.2fx)" % (
                label, rps, nginx_rps, rps / nginx_rps))
    for label, r in ratios.items():
        print("%-10s GET / nginx: %s, median %.2fx" % (label, " ".join("%.2fx" % x for x in r), median(r)))


def main():
    procs = harness.Processes()
    tmp = tempfile.mkdtemp(prefix="kcp-bench-packed-")
    nginx = None
    try:
        base = loaded_apiserver(procs, PODS)
        empty = clients.start_apiserver(procs, "--enable-control")
        empty_base = "http://127.0.0.1:%d" % empty.port
        results = {}
        for encoding in ENCODINGS:
            empty_px = proxy_for(procs, empty_base, encoding, 0)
            rss0 = settled_rss(empty_px)
            empty_px.stop()
            start = time.monotonic()
            px = proxy_for(procs, base, encoding, PODS)
            ready = time.monotonic() - start
            g = gauges(px)
            json_mb = g.get("json_bytes", 0) / 1e6
            settled = settled_rss(px) - rss0
            print("%-10s synced and packed in %.1f s: %d pods, %.1f MB of JSON, %.1f MB packed; RSS %.1f MB, growth "
                  "%.1f MB over an empty collection's %.1f MB = %.2fx the JSON" % (
                      encoding, ready, PODS, json_mb, g.get("packed_bytes", 0) / 1e6, rss0 + settled, settled, rss0,
                      settled / json_mb))
            if POD_PATH[0] is None:
                _, _, body = harness.http_get("127.0.0.1", px.port, LIST_PATH + "&limit=1", timeout=60)
                item = json.loads(body)["items"][0]["metadata"]
                POD_PATH[0] = "/api/v1/namespaces/%s/pods/%s?resourceVersion=0" % (item["namespace"], item["name"])
                www = os.path.join(tmp, "www")
                os.makedirs(www)
                with open(os.path.join(www, "pod.json"), "wb") as f:
                    f.write(harness.http_get("127.0.0.1", px.port, POD_PATH[0])[2])
                nginx = Nginx(tmp)
            if GET_ONLY:
                results[encoding] = px
                continue
            results[encoding] = measure_lists(encoding, px, json_mb, rss0)
            results[encoding]["get"] = measure_get(encoding, px, nginx)
            px.stop()
        if GET_ONLY:
            get_rounds(results, nginx)
        elif "plain" in results:
            for encoding, r in results.items():
                p = results["plain"]
                print("%-10s vs plain: first LIST %.2fx, LIST %.2fx (proxy CPU %.2fx), gzip'd LIST %.2fx (proxy CPU "
                      "%.2fx); GET %.2fx of nginx" % (
                          encoding, r["first"] / p["list"], r["list"] / p["list"], r["list_cpu"] / p["list_cpu"],
                          r["gzip"] / p["gzip"], r["gzip_cpu"] / max(p["gzip_cpu"], 1e-9), r["get"]))
    finally:
        if nginx:
            nginx.stop()
        procs.stop_all()


if __name__ == "__main__":
    main()
