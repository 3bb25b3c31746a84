#!/usr/bin/python3
"""gzip'd LISTs from the cache (issue 20): a build that deflates every LIST per request
vs one that splices each chunk's kept CompressedRun, measured in one run against the
same test apiserver, one proxy per build, both caching pods.

Three proxies: the build before (deflates per request), this build with --gzip-loopback
(kept runs), this build as a sidecar answers loopback clients (plain). For each: LIST of 10,000 pods at RV=0, plain and with Accept-Encoding: gzip
(curl, median of 21 full downloads, the body left compressed as a Go client receives
it); proxy CPU per LIST (utime+stime from /proc/PID/stat over those 21); the first gzip'd
LIST after a sync (the one that makes the runs); 100 gzip'd LISTs at once (100 curl
processes): wall time and total proxy CPU.

Not a test; the numbers go to docs/benchmarks.md.

  KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/bench_gzip_list.py BEFORE_PROXY_BIN
  BENCH_PODS=10000 (default)
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402

PODS = int(os.environ.get("BENCH_PODS", "10000"))
LIST_PATH = "/api/v1/pods?resourceVersion=0"
RUNS = 21


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def curl(url, gzip):
    """(seconds, bytes received) of one full download; a neutral User-Agent (curl's own
    is answered pretty-printed, i.e. passed through)."""
    cmd = ["curl", "-s", "-A", "kcp-bench", "-o", "/dev/null", "-w", "%{time_total} %{size_download}", url]
    if gzip:
        cmd[1:1] = ["-H", "Accept-Encoding: gzip"]
    seconds, size = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    return float(seconds), int(size)


def served_by(px):
    headers = harness.http_get("127.0.0.1", px.port, LIST_PATH, timeout=60)[1]
    return next((v for k, v in headers.items() if k.lower() == "x-kube-cache-proxy"), "")


def served_from_cache(px):
    return served_by(px).startswith("cache")


def cache_rv(px):
    """The RV the proxy's cache answers RV=0 LISTs at ("cache; rv=N")."""
    value = served_by(px)
    return int(value.split("rv=")[1]) if "rv=" in value else 0


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1]) / 1024


def measure(label, px):
    url = "http://127.0.0.1:%d%s" % (px.port, LIST_PATH)
    rss0 = rss_mb(px.pid)
    first_cpu = cpu_seconds(px.pid)
    first, _ = curl(url, True)
    first_cpu = cpu_seconds(px.pid) - first_cpu
    print("%-7s first gzip'd LIST after the sync: %.1f ms, proxy CPU %.0f ms" % (label, first * 1000, first_cpu * 1000))
    out = {}
    for gzip in (False, True):
        curl(url, gzip)  # warm-up
        cpu0 = cpu_seconds(px.pid)
        samples = [curl(url, gzip) for _ in range(RUNS)]
        cpu = (cpu_seconds(px.pid) - cpu0) / RUNS
        median = sorted(s for s, _ in samples)[RUNS // 2]
        out[gzip] = median
        print("%-7s LIST %-5s median %7.1f ms  %6.1f MB on the wire  proxy CPU %6.1f ms per LIST" % (
            label, "gzip" if gzip else "plain", median * 1000, samples[0][1] / 1e6, cpu * 1000))
    print("%-7s gzip'd / plain LIST time: %.2fx" % (label, out[True] / out[False]))
    cpu0 = cpu_seconds(px.pid)
    start = time.monotonic()
    procs = [subprocess.Popen(["curl", "-s", "-A", "kcp-bench", "-H", "Accept-Encoding: gzip", "-o", "/dev/null",
                               "-w", "%{http_code}", url], stdout=subprocess.PIPE, text=True) for _ in range(100)]
    codes = [p.communicate()[0] for p in procs]
    wall = time.monotonic() - start
    cpu = cpu_seconds(px.pid) - cpu0
    print("%-7s 100 gzip'd LISTs at once: %.2f s wall, proxy CPU %.2f s in all (%.1f ms each); statuses %s" % (
        label, wall, cpu, cpu * 10, sorted(set(codes))))
    print("%-7s RSS %.1f MB before the first gzip'd LIST, %.1f MB after all" % (label, rss0, rss_mb(px.pid)))


def measure_churn(proxies, base):
    """gzip'd LISTs while the upstream changes 200 pods/s: changed chunks are deflated again."""
    rvs = {label: cache_rv(px) for label, px in proxies}
    clients.control(base, "/control/churn?rate=200&seconds=40")
    for label, px in proxies:  # churn under way: every cache has moved on
        harness.wait_for(lambda: cache_rv(px) > rvs[label] + 100, timeout=10, interval=0.05, message="churn seen")
    for label, px in proxies:
        url = "http://127.0.0.1:%d%s" % (px.port, LIST_PATH)
        cpu0 = cpu_seconds(px.pid)
        samples = [curl(url, True)[0] for _ in range(11)]
        cpu = (cpu_seconds(px.pid) - cpu0) / 11
        print("%-7s under churn (200 pods/s): gzip'd LIST median %.1f ms, proxy CPU %.1f ms per LIST (events "
              "included), RSS %.1f MB" % (label, sorted(samples)[5] * 1000, cpu * 1000, rss_mb(px.pid)))


def loaded_apiserver(procs, pods):
    """A test apiserver holding `pods` realistic pods; returns its URL."""
    api = clients.start_apiserver(procs, "--enable-control")
    base = "http://127.0.0.1:%d" % api.port
    clients.control(base, "/control/load?resource=pods&count=%d&namespaces=10&nodes=50" % pods)
    return base


def start_proxy(procs, binary, base, args):
    """A proxy of `binary` in front of `base`, once it is ready."""
    px = procs.start([binary, "--listen", "127.0.0.1:0", "--upstream", base] + args)
    harness.wait_for(lambda: harness.http_get("127.0.0.1", px.port, "/readyz")[0] == 200, timeout=60,
                     interval=0.1, message="proxy ready")
    return px


def main():
    before_bin = sys.argv[1]
    procs = harness.Processes()
    try:
        base = loaded_apiserver(procs, PODS)
        proxies = []
        # "after" compresses for loopback clients (--gzip-loopback) to measure the kept runs;
        # "sidecar" is the default, which answers its loopback clients plain.
        for label, binary, extra in (("before", before_bin, []), ("after", harness.PROXY_BIN, ["--gzip-loopback"]),
                                     ("sidecar", harness.PROXY_BIN, [])):
            px = start_proxy(procs, binary, base, ["--cache", "pods"] + extra)
            harness.wait_for(lambda: served_from_cache(px), timeout=30, interval=0.2, message="served from the cache")
            proxies.append((label, px))
        print("LIST of %d pods at RV=0, curl, median of %d" % (PODS, RUNS))
        for label, px in proxies:
            measure(label, px)
        measure_churn(proxies, base)
    finally:
        procs.stop_all()


if __name__ == "__main__":
    main()
