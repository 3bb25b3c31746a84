"""Benchmark (not a CTest test): N downstream watches of pods through the proxy's cache
receiving events, measured from the upstream write's answer to each watcher's line.

    KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/bench_cached_watch.py [WATCHERS] [EVENTS] [direct]

With "direct" the watches go to the test apiserver itself, for comparison.

Reports delivery latency p50/p99/max per event, the proxy's RSS before and after opening
the watches, and the proxy's CPU time spent delivering the events.
"""
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402



def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def open_watch(port, rv, arrivals, ready):
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    writer.write(("GET /api/v1/pods?watch=1&resourceVersion=%s HTTP/1.1\r\nHost: localhost\r\n\r\n" % rv).encode())
    await writer.drain()
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    ready.append(1)
    while True:
        size = await reader.readline()
        if not size:
            return
        n = int(size.strip(), 16)
        if n == 0:
            return
        data = await reader.readexactly(n + 2)
        now = time.monotonic()
        # The first "name" of a pod event is metadata.name; no full decode on the clock.
        for line in data[:-2].splitlines():
            start = line.find(b'"name":"') + 8
            name = line[start:line.find(b'"', start)].decode()
            arrivals.setdefault(name, []).append(now)


async def main(watchers, events, direct):
    processes = harness.Processes()
    try:
        api = clients.start_apiserver(processes, "--enable-control")
        upstream = "http://127.0.0.1:%d" % api.port
        clients.ensure_namespace(upstream, "bench")
        if direct:
            proxy = api
        else:
            proxy = processes.proxy(upstream, "--cache", "pods", "--cache-on-demand=false")
            harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/readyz")[0] == 200, timeout=30,
                             message="the proxy's pod cache synced")
        rss_idle = harness.rss_kib(proxy.pid)
        rv = json.loads(clients.request(upstream + "/api/v1/pods")[1])["metadata"]["resourceVersion"]
        arrivals, ready = {}, []
        tasks = [asyncio.create_task(open_watch(proxy.port, rv, arrivals, ready)) for _ in range(watchers)]
        t0 = time.monotonic()
        while len(ready) < watchers:
            await asyncio.sleep(0.01)
        connect_s = time.monotonic() - t0
        rss_open = harness.rss_kib(proxy.pid)
        cpu0 = cpu_seconds(proxy.pid)
        latencies = []
        for i in range(events):
            name = "bench-%d" % i
            await asyncio.to_thread(clients.request, upstream + "/api/v1/namespaces/bench/pods", "POST",
                                    clients.pod(name))
            written = time.monotonic()
            deadline = written + 30
            while len(arrivals.get(name, [])) < watchers and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            got = arrivals.get(name, [])
            latencies.extend(t - written for t in got)
            print("event %d: %d/%d watchers, last after %.1f ms" % (i, len(got), watchers, (max(got) - written) * 1000))
        cpu = cpu_seconds(proxy.pid) - cpu0
        rss_end = harness.rss_kib(proxy.pid)
        latencies.sort()
        pct = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000  # noqa: E731
        print("watchers=%d events=%d connect=%.2fs" % (watchers, events, connect_s))
        print("delivery ms: p50=%.1f p99=%.1f max=%.1f (n=%d)" % (pct(0.5), pct(0.99), latencies[-1] * 1000,
                                                                len(latencies)))
        print("proxy RSS KiB: idle=%d with watches=%d (%.1f KiB/watch) after events=%d" % (
            rss_idle, rss_open, (rss_open - rss_idle) / watchers, rss_end))
        print("proxy CPU for the events: %.3f s" % cpu)
        for t in tasks:
            t.cancel()
    finally:
        processes.stop_all()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, int(sys.argv[2]) if len(sys.argv) > 2 else 5,
                     len(sys.argv) > 3 and sys.argv[3] == "direct"))
