"""Names that are no DNS labels (issue 36, finding 4): in a sidecar, a namespace decoded from
`%0D%0A` started a per-namespace informer (and, under a cluster-wide one, a freshness probe)
whose upstream request line carried the raw CR LF with the proxy's token, and whose log lines
it forged. Namespaces are DNS-1123 labels (the apiserver's ValidateNamespaceName); a read or
watch naming anything else passes through as it came, and every path the proxy builds for
the upstream is escaped as Go's URL.EscapedPath escapes it.

The upstream's side is seen through a relay that records every byte the proxy sends it.
"""
import socket
import threading
import unittest

import clients
import harness

FORGED = "FORGED kube-cache-proxy line"
# A CR LF and the text an attacker wants on a line of its own, as a request path carries it.
NAMESPACE = "%0D%0A" + FORGED.replace(" ", "%20")


class RecordingRelay:
    """A TCP relay on a free 127.0.0.1 port to `port`, keeping what clients send."""

    def __init__(self, port):
        self.upstream_port = port
        self.sent = bytearray()
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self.pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(upstream, client, False), daemon=True).start()

    def pump(self, source, sink, record):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if record:
                    with self.lock:
                        self.sent += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            source.close()

    def recorded(self):
        with self.lock:
            return bytes(self.sent)

    def close(self):
        self.listener.close()


class NamespaceNamesTest(unittest.TestCase):
    def setUp(self):
        self.processes = harness.Processes()
        self.addCleanup(self.processes.stop_all)

    def sidecar(self, *args):
        """A sidecar behind a recording relay in front of the test apiserver."""
        api = clients.start_apiserver(self.processes, "--authn", "--sample-data", "--enable-control")
        relay = RecordingRelay(api.port)
        self.addCleanup(relay.close)
        proxy = self.processes.proxy("http://127.0.0.1:%d" % relay.port, *args)
        harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/readyz")[0] == 200, timeout=20,
                         message="proxy ready")
        return proxy, relay

    def assertNotInjected(self, proxy, relay):
        upstream = relay.recorded()
        # A raw CR LF or space in a request line: what Go's server refuses and client-go never sends.
        request_lines = upstream.count(b"\n" + FORGED.encode()) + upstream.count(b"/a b/")
        log_lines = [line for line in proxy.stderr().splitlines() if line.startswith("FORGED")]
        print("%s: %d upstream request lines with a raw CR LF or space, %d forged log lines"
              % (self.id().rsplit(".", 1)[-1], request_lines, len(log_lines)))
        self.assertEqual((request_lines, log_lines), (0, []), upstream)

    def test_finding_namespaces_that_are_not_dns_labels_start_informers(self):
        # Alice may list pods in namespace "a" only: the cluster-wide list is forbidden, so
        # the sidecar caches the namespaces requests name, one informer each.
        proxy, relay = self.sidecar("--token", "alice-token", "--cache-start-wait", "2s")
        status, headers, _ = harness.http_get(proxy.host, proxy.port, "/api/v1/namespaces/a/pods")
        self.assertEqual(status, 200)
        harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/api/v1/namespaces/a/pods?resourceVersion=0")[1]
                         .get("X-Kube-Cache-Proxy", "").startswith("cache"), timeout=20, message="namespace a cached")
        for path in ("/api/v1/namespaces/%s/pods" % NAMESPACE, "/api/v1/namespaces/%s/pods?resourceVersion=0" % NAMESPACE,
                     "/api/v1/namespaces/%s/pods?watch=1&timeoutSeconds=1" % NAMESPACE,
                     "/api/v1/namespaces/%s/pods/p" % NAMESPACE):
            with self.subTest(path=path):
                status, headers, body = harness.http_get(proxy.host, proxy.port, path)
                # Passed through as it came: the upstream answers for such a name.
                self.assertEqual(headers.get("X-Kube-Cache-Proxy"), "upstream", (status, body))
        self.assertNotInjected(proxy, relay)
        self.assertIn(NAMESPACE.encode(), relay.recorded())

    def test_finding_namespaces_that_are_not_dns_labels_get_no_fence(self):
        # A cluster-wide cache answers every namespace; a consistent read of one first proves
        # the cache fresh with an upstream read of that namespace's collection.
        proxy, relay = self.sidecar("--token", "admin-token", "--cache", "pods", "--cache-on-demand=false")
        status, headers, _ = harness.http_get(proxy.host, proxy.port, "/api/v1/namespaces/default/pods")
        self.assertEqual((status, headers.get("X-Kube-Cache-Proxy", "")[:5]), (200, "cache"))
        for path in ("/api/v1/namespaces/%s/pods" % NAMESPACE, "/api/v1/namespaces/%s/pods?watch=1&timeoutSeconds=1"
                     % NAMESPACE, "/api/v1/namespaces/a%20b/pods"):
            with self.subTest(path=path):
                status, headers, body = harness.http_get(proxy.host, proxy.port, path)
                self.assertEqual(headers.get("X-Kube-Cache-Proxy"), "upstream", (status, body))
        self.assertNotInjected(proxy, relay)


if __name__ == "__main__":
    unittest.main()
