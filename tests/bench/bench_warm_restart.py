"""Start-up to "synced" (/readyz 200) with and without a warm restart (--state-dir), at
100,000 pods in the test apiserver (/control/load). Not a CTest test; see
docs/benchmarks.md. Cold and warm starts alternate so both see the same machine load.

    cd tests/bench && KCP_BIN_DIR=../../build/bin /usr/bin/python3 bench_warm_restart.py [pods] [rounds]
"""
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402


def cpu_seconds(pid):
    """utime + stime of a process so far (/proc/PID/stat), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ready_after(processes, base, state_dir, api):
    args = ["--cache", "pods", "--cache-on-demand=false"]
    if state_dir:
        args += ["--state-dir", state_dir, "--state-save-interval", "0"]
    started = time.monotonic()
    api_cpu = cpu_seconds(api.pid)
    proxy = processes.proxy(base, *args)
    harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/readyz")[0] == 200, timeout=600,
                     interval=0.02, message="ready")
    took = time.monotonic() - started
    rss = harness.rss_kib(proxy.pid) / 1024
    cpu = (cpu_seconds(proxy.pid), cpu_seconds(api.pid) - api_cpu)
    return proxy, took, rss, cpu


def main():
    pods = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    processes = harness.Processes()
    state_dir = tempfile.mkdtemp(prefix="kcp-bench-warm-")
    try:
        api = clients.start_apiserver(processes, "--enable-control")
        base = "http://127.0.0.1:%d" % api.port
        # In batches: one request per 10,000 pods stays well inside the client's timeout.
        for start in range(0, pods, 10000):
            count = min(10000, pods - start)
            status, body = clients.request(base + "/control/load?resource=pods&count=%d&namespaces=100&nodes=100"
                                           % count, "POST", b"")
            assert status == 200, body
        print("loaded %d pods: %s" % (pods, body.decode()), flush=True)
        # The first start writes the state the warm starts read.
        proxy, _, _, _ = ready_after(processes, base, state_dir, api)
        proxy.stop(timeout=120)
        for round_ in range(rounds):
            proxy, cold, cold_rss, cold_cpu = ready_after(processes, base, None, api)
            proxy.stop(timeout=120)
            proxy, warm, warm_rss, warm_cpu = ready_after(processes, base, state_dir, api)
            log = proxy.stderr()
            loaded = re.search(r"loaded (\d+) saved objects at resourceVersion \d+ in ([0-9.]+) s \(([0-9.]+) s reading", log)
            proxy.stop(timeout=120)
            saved = re.search(r"saved the state of \d+ cached resources in ([0-9.]+) s", proxy.stderr())
            size = os.path.getsize(os.path.join(state_dir, "pods.v1._all.state")) / 1e6
            print("round %d: CPU to ready: cold proxy %.2f s + apiserver %.2f s, warm proxy %.2f s + apiserver %.2f s"
                  % (round_ + 1, cold_cpu[0], cold_cpu[1], warm_cpu[0], warm_cpu[1]), flush=True)
            print("round %d: cold %.2f s (RSS %.0f MiB), warm %.2f s (RSS %.0f MiB; state file %.0f MB loaded in %s s, %s s of it "
                  "reading and verifying; "
                  "saved in %s s), ratio cold/warm %.2f"
                  % (round_ + 1, cold, cold_rss, warm, warm_rss, size, loaded.group(2) if loaded else "?", loaded.group(3) if loaded else "?",
                     saved.group(1) if saved else "?", cold / warm), flush=True)
    finally:
        processes.stop_all()
        shutil.rmtree(state_dir, True)


if __name__ == "__main__":
    main()
