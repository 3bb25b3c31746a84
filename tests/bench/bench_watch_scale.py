"""Benchmark (not a CTest test): watch fan-out at scale through kube-cache-proxy, with the
test apiserver serving the same watchers directly as the peer in the same run.

    cmake --build build --target kube-cache-proxy kube-test-apiserver watch-load
    KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/bench_watch_scale.py SCENARIO [options]

Scenarios:
  fanout   WATCHERS watches of one resource (pods in one namespace), pods created at RATE/s
  nodes    WATCHERS watches, each with its own spec.nodeName field selector; each pod goes to
           one node. Peers: the same with a label selector per watcher (not indexed), and
           WATCHERS unselective watches
  stalled  WATCHERS reading watches plus STALLED watches that never read; pods of FILLER bytes

The load client is tests/bench/watch_load.cpp (one epoll thread per core). Each pod carries the
annotation kcp-bench/created = CLOCK_REALTIME ns taken just before its create request, so
latency is create request -> event line at the watcher (upstream write + upstream watch +
proxy fan-out + delivery). Proxy CPU and RSS come from /proc.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402

LOAD_BIN = os.path.join(harness.BIN_DIR, "watch-load")
# The load client's epoll threads: one per core by default, so that it can keep pace with
# a server that uses every core (KCP_BENCH_LOAD_THREADS overrides).
LOAD_THREADS = int(os.environ.get("KCP_BENCH_LOAD_THREADS", os.cpu_count() or 1))


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runqueue_wait_seconds(pid):
    """Time the process's threads spent runnable but not running (schedstat field 2)."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
                total += int(f.read().split()[1])
        except OSError:
            pass
    return total / 1e9


def write_pods(upstream, rate, seconds, node_count=0, filler=0, prefix="p"):
    """Creates rate*seconds pods at a steady rate; returns how many were created."""
    total = int(rate * seconds)
    start = time.monotonic()
    for i in range(total):
        due = start + i / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        body = clients.pod("%s-%d" % (prefix, i))
        if node_count:
            # The same node as a label, so that label-selected peers match as often.
            body["spec"]["nodeName"] = body["metadata"]["labels"]["node"] = "node-%d" % (i % node_count)
        annotations = {"kcp-bench/created": str(time.time_ns())}
        if filler:
            annotations["filler"] = "x" * filler
        body["metadata"]["annotations"] = annotations
        status, out = clients.request(upstream + "/api/v1/namespaces/bench/pods", "POST", body)
        assert status == 201, out
    return total


def run_load(processes, target, path, watchers, rate, seconds, stalled=0, distinct=0, node_count=0, filler=0,
             prefix="p", upstream=None):
    """Opens the watches on `target`, writes the pods, returns the measurements."""
    rv = json.loads(clients.request(upstream + "/api/v1/namespaces/bench/pods?limit=1")[1])["metadata"][
        "resourceVersion"]
    full = path.replace("{rv}", rv)
    rss_idle = harness.rss_kib(target.pid)
    argv = [LOAD_BIN, "--port", str(target.port), "--path", full, "--watchers", str(watchers),
            "--stalled", str(stalled)]
    if distinct:
        argv += ["--distinct", str(distinct)]
    argv += ["--threads", str(LOAD_THREADS)]
    load = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        line = load.stdout.readline()
        assert line.startswith("ready"), line
        connect_s = time.monotonic() - t0
        # Let the server settle (accept queues drained, watchers registered).
        time.sleep(1)
        rss_open = harness.rss_kib(target.pid)
        cpu0 = cpu_seconds(target.pid)
        load_cpu0 = cpu_seconds(load.pid)
        wait0, load_wait0 = runqueue_wait_seconds(target.pid), runqueue_wait_seconds(load.pid)
        t1 = time.monotonic()
        created = write_pods(upstream, rate, seconds, node_count, filler, prefix)
        # Deliveries still in flight.
        time.sleep(2)
        elapsed = time.monotonic() - t1
        cpu = cpu_seconds(target.pid) - cpu0
        load_cpu = cpu_seconds(load.pid) - load_cpu0
        wait = runqueue_wait_seconds(target.pid) - wait0
        load_wait = runqueue_wait_seconds(load.pid) - load_wait0
        rss_end = harness.rss_kib(target.pid)
        load.stdin.close()
        result = json.loads(load.stdout.readline())
    finally:
        if load.poll() is None:
            load.kill()
        load.wait()
    result.update(created=created, connect_s=round(connect_s, 2), rss_idle_kib=rss_idle, rss_open_kib=rss_open,
                  rss_end_kib=rss_end, kib_per_watcher=round((rss_open - rss_idle) / max(watchers + stalled, 1), 2),
                  server_cpu_s=round(cpu, 3), server_cpu_pct=round(100 * cpu / elapsed, 1),
                  server_cpu_ms_per_event=round(1000 * cpu / max(created, 1), 3),
                  load_cpu_pct=round(100 * load_cpu / elapsed, 1),
                  # Runnable but waiting for a CPU, summed over threads: the machine's share.
                  server_runqueue_wait_s=round(wait, 2), load_runqueue_wait_s=round(load_wait, 2))
    return result


def start_servers(processes, queue_capacity=None):
    api = clients.start_apiserver(processes)
    upstream = "http://127.0.0.1:%d" % api.port
    clients.ensure_namespace(upstream, "bench")
    extra = ["--watch-queue-capacity", str(queue_capacity)] if queue_capacity else []
    extra += os.environ.get("KCP_BENCH_PROXY_FLAGS", "").split()
    proxy = processes.proxy(upstream, "--cache", "pods", "--cache-on-demand=false", *extra)
    harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/readyz")[0] == 200, timeout=60,
                     message="the proxy's pod cache synced")
    return api, upstream, proxy


def report(name, result):
    print("%-28s %s" % (name, json.dumps(result, sort_keys=True)), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["fanout", "nodes", "stalled"])
    parser.add_argument("--watchers", type=int, default=0)
    parser.add_argument("--rate", type=float, default=0)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--stalled", type=int, default=500)
    parser.add_argument("--filler", type=int, default=10000)
    parser.add_argument("--queue-capacity", type=int, default=0)
    parser.add_argument("--no-direct", action="store_true", help="skip the test apiserver peer")
    args = parser.parse_args()
    watch = "/api/v1/namespaces/bench/pods?watch=1&resourceVersion={rv}"
    processes = harness.Processes()
    try:
        api, upstream, proxy = start_servers(processes, args.queue_capacity or None)
        if args.scenario == "fanout":
            watchers, rate = args.watchers or 10000, args.rate or 10
            report("proxy", run_load(processes, proxy, watch, watchers, rate, args.seconds, upstream=upstream,
                                     prefix="px"))
            if not args.no_direct:
                report("apiserver direct", run_load(processes, api, watch, watchers, rate, args.seconds,
                                                    upstream=upstream, prefix="up"))
        elif args.scenario == "nodes":
            watchers, rate = args.watchers or 5000, args.rate or 50
            by_field = watch + "&fieldSelector=spec.nodeName%3Dnode-{i}"
            by_label = watch + "&labelSelector=node%3Dnode-{i}"
            report("proxy nodeName selectors", run_load(processes, proxy, by_field, watchers, rate, args.seconds,
                                                        node_count=watchers, upstream=upstream, prefix="f"))
            report("proxy label selectors", run_load(processes, proxy, by_label, watchers, rate, args.seconds,
                                                     node_count=watchers, upstream=upstream, prefix="l"))
            report("proxy unselective", run_load(processes, proxy, watch, watchers, rate, args.seconds,
                                                 node_count=watchers, upstream=upstream, prefix="u"))
            if not args.no_direct:
                report("apiserver nodeName selectors", run_load(processes, api, by_field, watchers, rate, args.seconds,
                                                                node_count=watchers, upstream=upstream, prefix="d"))
        else:
            watchers, rate = args.watchers or 1000, args.rate or 10
            report("proxy no stalled", run_load(processes, proxy, watch, watchers, rate, args.seconds,
                                                filler=args.filler, upstream=upstream, prefix="n"))
            report("proxy %d stalled" % args.stalled,
                   run_load(processes, proxy, watch, watchers, rate, args.seconds, stalled=args.stalled,
                            filler=args.filler, upstream=upstream, prefix="s"))
            slow = harness.http_get(proxy.host, proxy.port, "/metrics")[2].decode()
            print("\n".join(line for line in slow.splitlines() if "terminated_slow" in line and "pods" in line))
    finally:
        processes.stop_all()


if __name__ == "__main__":
    main()
