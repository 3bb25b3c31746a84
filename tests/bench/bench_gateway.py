"""What gateway mode costs per cached GET: wrk against kube-cache-proxy in front of
kube-test-apiserver --authn, in one run:

  sidecar       plain HTTP, no checks (the proxy's own credentials)
  gateway       HTTPS, TokenReview + SubjectAccessReview outcomes cached (default TTLs)
  gateway-ttl0  HTTPS, a TokenReview and a SubjectAccessReview per request

Run: cd tests/bench && KCP_BIN_DIR=../../build/bin python3 bench_gateway.py [seconds]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402

PATH = "/api/v1/namespaces/a/pods/p-a?resourceVersion=0"


def wrk(url, seconds, token=None):
    args = ["wrk", "-t1", "-c8", "-d%ds" % seconds, "--latency"]
    if token:
        args += ["-H", "Authorization: Bearer " + token]
    out = subprocess.run(args + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, p50, p99, int(non2xx.group(1)) if non2xx else 0


def main():
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    workdir = tempfile.mkdtemp()
    pki = harness.make_pki(workdir)
    procs = harness.Processes()
    try:
        api = clients.start_apiserver(procs, "--authn", "--enable-control")
        upstream = "http://%s:%d" % (api.host, api.port)
        for body, path in (({"metadata": {"name": "a"}}, "/api/v1/namespaces"),
                           (clients.pod("p-a"), "/api/v1/namespaces/a/pods")):
            subprocess.run(["curl", "-fsS", "-o", "/dev/null", "-H", "Authorization: Bearer admin-token", "-H",
                            "Content-Type: application/json", "-d", __import__("json").dumps(body), upstream + path],
                           check=True)
        common = ["--upstream", upstream, "--token", "proxy-token", "--cache", "pods", "--cache-on-demand=false"]
        tls = ["--mode", "gateway", "--tls-cert-file", pki["server_cert"], "--tls-private-key-file",
               pki["server_key"]]
        setups = [("sidecar", common, "http", None),
                  ("gateway", common + tls, "https", "alice-token"),
                  ("gateway-ttl0", common + tls + ["--authentication-cache-ttl", "0s", "--authorization-cache-ttl",
                                                   "0s"], "https", "alice-token")]
        print("%-13s %10s %8s %8s %6s" % ("setup", "req/s", "p50", "p99", "non2xx"))
        # Twice, in a different order, so that load from the rest of the machine shows.
        for name, args, scheme, token in setups + setups[::-1]:
            proxy = procs.start([harness.PROXY_BIN, "--listen", "127.0.0.1:0", *args])
            url = "%s://127.0.0.1:%d" % (scheme, proxy.port)
            harness.wait_for(lambda: subprocess.run(["curl", "-ksf", "-o", "/dev/null", url + "/readyz"]).returncode == 0,
                             timeout=30, message="ready")
            rps, p50, p99, bad = wrk(url + PATH, seconds, token)
            print("%-13s %10.0f %8s %8s %6d" % (name, rps, p50, p99, bad))
            proxy.stop()
    finally:
        procs.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
