#!/usr/bin/python3
"""Measures the pass-through against the stub upstream, direct vs through the proxy:
latency of small GETs (keep-alive and a new connection per request) and
throughput of a 100 MB body. Not a test; numbers go to docs/design/server.md.

  KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/bench_passthrough.py
"""
import http.client
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402


def small_gets(host, port, n, reuse):
    samples = []
    conn = http.client.HTTPConnection(host, port, timeout=10)
    for _ in range(n):
        if not reuse:
            conn = http.client.HTTPConnection(host, port, timeout=10)
        t = time.perf_counter()
        conn.request("GET", "/status/200")
        conn.getresponse().read()
        samples.append((time.perf_counter() - t) * 1000)
        if not reuse:
            conn.close()
    conn.close()
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def big_body(host, port, total=100_000_000):
    conn = http.client.HTTPConnection(host, port, timeout=120)
    t = time.perf_counter()
    conn.request("GET", "/big?bytes=%d" % total)
    r = conn.getresponse()
    got = 0
    while True:
        d = r.read(1 << 20)
        if not d:
            break
        got += len(d)
    assert got == total
    return total / 1e6 / (time.perf_counter() - t)


def main():
    procs = harness.Processes()
    try:
        up = procs.stub_upstream()
        px = procs.proxy("http://127.0.0.1:%d" % up.port)
        for label, port in (("direct", up.port), ("proxy", px.port)):
            small_gets("127.0.0.1", port, 50, True)  # warm-up
            p50k, p99k = small_gets("127.0.0.1", port, 500, True)
            p50n, p99n = small_gets("127.0.0.1", port, 300, False)
            mbs = max(big_body("127.0.0.1", port) for _ in range(3))
            print("%-6s small GET keep-alive p50 %.3f ms p99 %.3f ms | new conn p50 %.3f ms p99 %.3f ms | 100 MB at %.0f MB/s"
                  % (label, p50k, p99k, p50n, p99n, mbs))
        print("proxy RSS after: %d KiB" % harness.rss_kib(px.pid))
    finally:
        procs.stop_all()


if __name__ == "__main__":
    main()
