"""Consistent reads (RV unset) through a chain of two proxies, under churn: the share each
hop answers from its cache and the mean latency (docs/benchmarks.md, "Chained proxies").

Usage: KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/bench_chain.py [reads]
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402


def main():
    reads = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    processes = harness.Processes()
    try:
        api = clients.start_apiserver(processes, "--enable-control", "--sample-data")
        upstream = "http://127.0.0.1:%d" % api.port
        a = processes.proxy(upstream, "--cache", "pods,configmaps")
        b = processes.proxy("http://127.0.0.1:%d" % a.port, "--cache", "pods,configmaps")
        for p in (a, b):
            harness.wait_for(lambda p=p: harness.http_get(p.host, p.port, "/readyz")[0] == 200, timeout=20)
        clients.request(upstream + "/control/churn?rate=50&seconds=60", "POST", b"")
        print("| hop | path | served from cache | mean latency |\n|---|---|---|---|")
        for name, p in (("A (add-on)", a), ("B (sidecar -> A)", b)):
            for path in ("/api/v1/pods", "/api/v1/configmaps"):
                cached, total = 0, 0.0
                for _ in range(reads):
                    start = time.monotonic()
                    status, headers, _ = harness.http_get(p.host, p.port, path, {"User-Agent": "bench/1"})
                    total += time.monotonic() - start
                    assert status == 200, status
                    cached += headers.get("X-Kube-Cache-Proxy", "").startswith("cache")
                print("| %s | %s | %d/%d | %.1f ms |" % (name, path, cached, reads, 1000 * total / reads))
    finally:
        processes.stop_all()


if __name__ == "__main__":
    main()
