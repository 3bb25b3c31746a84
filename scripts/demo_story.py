#!/usr/bin/python3
"""The demo's numbers (issue 19): what the proxy saves, measured on the embedded default.

  demo_story.py PROXY_URL UPSTREAM_URL

UPSTREAM_URL is the bundled test apiserver started with --enable-control (its
/control/counters tell what reached it). Prints, each measured now:
  1. a few requests through the proxy and directly: who answered, median latency;
  2. the upstream's request count before and after 1,000 cached reads;
  3. 200 watches through the proxy against the watches the upstream holds;
  4. a LIST of 10,000 pods each way (it loads them into the test apiserver first; they stay).
"""
import http.client
import json
import socket
import statistics
import sys
import time
import urllib.parse

SERVED_BY = "X-Kube-Cache-Proxy"


class Endpoint:
    """One keep-alive connection to a server."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)

    def request(self, path, method="GET", body=None):
        headers = {"Accept": "application/json", "User-Agent": "demo-story"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        start = time.perf_counter()
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        payload = r.read()
        return r.status, r.getheader(SERVED_BY, ""), payload, time.perf_counter() - start


def counters(upstream):
    conn = http.client.HTTPConnection(upstream.host, upstream.port, timeout=30)
    conn.request("POST", "/control/counters")
    answer = json.loads(conn.getresponse().read())
    conn.close()
    return answer


def median_ms(endpoint, path, method="GET", body=None, rounds=20):
    took, by, status = [], "", 0
    for i in range(rounds):
        b = dict(body, metadata={"name": "%s-%d-%d" % (body["metadata"]["name"], endpoint.port, i)}) if body else None
        status, by, _, seconds = endpoint.request(path, method, b)
        took.append(seconds * 1000)
    return status, by.split(";")[0] or "upstream", statistics.median(took)


def requests_compared(proxy, upstream):
    print("1. The same requests through the proxy and directly (median of 20 each)")
    print("   %-52s %-9s %9s %9s" % ("request", "answered", "proxy", "direct"))
    pod = json.loads(proxy.request("/api/v1/namespaces/demo/pods?resourceVersion=0")[2])["items"][0]["metadata"]["name"]
    cases = [("GET one pod", "/api/v1/namespaces/demo/pods/%s?resourceVersion=0" % pod, "GET", None),
             ("LIST pods in a namespace, resourceVersion=0", "/api/v1/namespaces/demo/pods?resourceVersion=0", "GET", None),
             ("LIST pods, consistent (resourceVersion unset)", "/api/v1/pods", "GET", None),
             ("create a ConfigMap (writes always pass through)", "/api/v1/namespaces/demo/configmaps", "POST",
              {"metadata": {"name": "demo-story"}, "data": {"k": "v"}})]
    for name, path, method, body in cases:
        status, by, proxy_ms = median_ms(proxy, path, method, body)
        _, _, direct_ms = median_ms(upstream, path, method, body)
        print("   %-52s %-9s %7.2f ms %7.2f ms" % (name, by if status < 300 else "HTTP %d" % status, proxy_ms, direct_ms))
    print("   (a consistent read is answered from memory only once a small upstream read proves the cache "
          "current, as the apiserver's own watch cache waits for etcd)")


def burst(proxy, upstream):
    before = sum(counters(upstream)["requests"].values())
    served = {}
    start = time.perf_counter()
    for _ in range(1000):
        by = proxy.request("/api/v1/namespaces/demo/pods?resourceVersion=0")[1].split(";")[0] or "upstream"
        served[by] = served.get(by, 0) + 1
    seconds = time.perf_counter() - start
    after = sum(counters(upstream)["requests"].values())
    print("\n2. 1,000 LISTs through the proxy in %.2f s: answered %s; requests the upstream received: "
          "%d before, %d after (+%d)" % (seconds, served, before, after, after - before))


def watchers(proxy, upstream, count=200):
    socks = []
    for _ in range(count):
        s = socket.create_connection((proxy.host, proxy.port), timeout=10)
        s.sendall(b"GET /api/v1/pods?watch=true&resourceVersion=0 HTTP/1.1\r\nHost: localhost\r\n"
                  b"User-Agent: demo-story\r\n\r\n")
        socks.append(s)
    for s in socks:
        if not s.recv(64).startswith(b"HTTP/1.1 200"):
            raise SystemExit("demo: a watch through the proxy was refused")
    held = counters(upstream)["openWatches"].get("pods", 0)
    print("\n3. %d watches of pods open through the proxy; watches of pods the upstream holds: %d" % (count, held))
    for s in socks:
        s.close()


def big_list(proxy, upstream, pods=10000):
    conn = http.client.HTTPConnection(upstream.host, upstream.port, timeout=120)
    conn.request("POST", "/control/load?resource=pods&count=%d&namespaces=10" % pods)
    conn.getresponse().read()
    conn.close()
    total = len(json.loads(upstream.request("/api/v1/pods?resourceVersion=0")[2])["items"])
    deadline = time.monotonic() + 60
    while len(json.loads(proxy.request("/api/v1/pods?resourceVersion=0")[2])["items"]) < total:
        if time.monotonic() > deadline:
            raise SystemExit("demo: the proxy's cache did not reach %d pods" % total)
        time.sleep(0.1)
    results = {}
    for name, endpoint in (("proxy", proxy), ("direct", upstream)):
        took = []
        for _ in range(3):
            status, by, body, seconds = endpoint.request("/api/v1/pods?resourceVersion=0")
            took.append(seconds * 1000)
        results[name] = (statistics.median(took), len(body), by.split(";")[0] or "upstream")
    print("\n4. LIST of all %d pods (%.1f MB, resourceVersion=0, median of 3): through the proxy %.0f ms "
          "(answered by the %s), directly %.0f ms (%.1fx); the %d loaded pods stay for you to explore"
          % (total, results["proxy"][1] / 1e6, results["proxy"][0], results["proxy"][2], results["direct"][0],
             results["direct"][0] / results["proxy"][0], pods))


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    proxy, upstream = Endpoint(sys.argv[1]), Endpoint(sys.argv[2])
    requests_compared(proxy, upstream)
    burst(proxy, upstream)
    watchers(proxy, upstream)
    big_list(proxy, upstream)


if __name__ == "__main__":
    main()
