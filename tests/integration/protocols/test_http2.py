"""HTTP/2 downstream (issue 18, contract N7): h2 by ALPN on TLS and h2c by prior knowledge, with
kube-apiserver's settings; every answer equal to the HTTP/1.1 one (contract N1, E1 and
the read clauses hold per request, whatever the framing); a stream whose client stops
reading stalls only itself. The client is python3-h2 (tests/integration/h2client.py),
which leaves flow control to the test.
"""
import http.client
import json
import signal
import ssl
import time
import unittest

import os
import sys

# The shared helpers (harness, clients, h2client) live one folder up.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import clients  # noqa: E402
import harness  # noqa: E402
from h2client import H2Client  # noqa: E402

READS = [
    "/api/v1/namespaces/default/pods",
    "/api/v1/pods?resourceVersion=0",
    "/api/v1/pods?resourceVersion=0&limit=2",
    "/api/v1/namespaces/default/pods/web-0?resourceVersion=0",
    "/api/v1/namespaces/default/pods/missing?resourceVersion=0",
    "/api/v1/pods?resourceVersion=0&labelSelector=app%3Dapp-1",
    "/api/v1/pods?resourceVersion=0&fieldSelector=bad",
    "/api/v1/namespaces/default/configmaps?resourceVersion=0",
    "/api",
    "/version",
]
# Headers that differ per request or per connection whatever the protocol.
VOLATILE = {"date", "audit-id", "connection", "keep-alive", "transfer-encoding", "content-length"}


def http11(port, path, headers=None, context=None):
    conn = (http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10) if context
            else http.client.HTTPConnection("127.0.0.1", port, timeout=10))
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def stable(headers):
    return {k: v for k, v in headers.items() if k not in VOLATILE and not k.startswith(":")}


def configmap(name, size):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"blob": "x" * size}}


class Http2Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.pki_workdir(cls)
        cls.processes = harness.class_processes(cls)
        cls.api = clients.start_apiserver(cls.processes, "--sample-data")
        cls.upstream = "http://127.0.0.1:%d" % cls.api.port
        cls.plain = cls.start_proxy()
        cls.tls = cls.start_proxy("--tls-cert-file", cls.pki["server_cert"], "--tls-private-key-file",
                                  cls.pki["server_key"])
        cls.context = ssl.create_default_context(cafile=cls.pki["ca"])

    @classmethod
    def start_proxy(cls, *args):
        proxy = cls.processes.proxy(cls.upstream, "--cache", "pods,configmaps", "--cache-on-demand=false", *args)
        scheme_context = None
        if "--tls-cert-file" in args:
            scheme_context = ssl.create_default_context(cafile=cls.pki["ca"])
        harness.wait_for(lambda: http11(proxy.port, "/readyz", context=scheme_context)[0] == 200, timeout=20,
                         message="the proxy's caches synced")
        return proxy

    def h2(self, proxy=None, tls=False, **kwargs):
        context = None
        if tls:
            context = ssl.create_default_context(cafile=self.pki["ca"])
            context.set_alpn_protocols(["h2", "http/1.1"])
        client = H2Client("127.0.0.1", (proxy or (self.tls if tls else self.plain)).port, context, **kwargs)
        self.addCleanup(client.close)
        return client

    def test_reads_over_h2c_and_h2_equal_http11_answers(self):
        """N1/E1 and the read clauses do not depend on the framing: status, body and
        headers of each answer as over HTTP/1.1 (h2c prior knowledge, and h2 by ALPN)."""
        for tls in (False, True):
            client = self.h2(tls=tls)
            if tls:
                self.assertEqual(client.alpn, "h2")
            port = (self.tls if tls else self.plain).port
            for path in READS:
                with self.subTest(tls=tls, path=path):
                    want = http11(port, path, context=self.context if tls else None)
                    got = client.get(path)
                    self.assertIsNone(got.reset)
                    self.assertEqual(got.status, want[0])
                    self.assertEqual(bytes(got.data), want[2])
                    self.assertEqual(stable(got.headers), stable(want[1]))
                    if "resourceVersion=0" in path and want[0] == 200:
                        self.assertTrue(got.headers.get("x-kube-cache-proxy", "").startswith("cache"))

    def test_settings_are_the_apiservers(self):
        client = self.h2()
        client.wait(lambda: client.conn.remote_settings.max_concurrent_streams == 100, message="SETTINGS")
        self.assertEqual(client.conn.remote_settings.initial_window_size, 256 * 1024)
        self.assertEqual(client.conn.remote_settings.max_frame_size, 256 * 1024)

    def test_alpn_prefers_h2_and_http2_false_serves_http11_only(self):
        for offered, want in ((["h2", "http/1.1"], "h2"), (["http/1.1"], "http/1.1")):
            context = ssl.create_default_context(cafile=self.pki["ca"])
            context.set_alpn_protocols(offered)
            with context.wrap_socket(__import__("socket").create_connection(("127.0.0.1", self.tls.port)),
                                     server_hostname="127.0.0.1") as s:
                self.assertEqual(s.selected_alpn_protocol(), want)
        off = self.start_proxy("--tls-cert-file", self.pki["server_cert"], "--tls-private-key-file",
                               self.pki["server_key"], "--http2=false")
        context = ssl.create_default_context(cafile=self.pki["ca"])
        context.set_alpn_protocols(["h2", "http/1.1"])
        with context.wrap_socket(__import__("socket").create_connection(("127.0.0.1", off.port)),
                                 server_hostname="127.0.0.1") as s:
            self.assertEqual(s.selected_alpn_protocol(), "http/1.1")

    def test_writes_with_streamed_bodies_pass_through(self):
        """A body in DATA frames without content-length (the proxy frames it chunked for
        the upstream) and one with content-length: both created, as the apiserver answers."""
        client = self.h2()
        for name, headers in (("h2-chunked", {}), ("h2-sized", None)):
            body = json.dumps(configmap(name, 100)).encode()
            fields = {"content-type": "application/json"}
            if headers is None:
                fields["content-length"] = str(len(body))
            s = client.request("POST", "/api/v1/namespaces/default/configmaps", fields, body)
            client.wait(lambda: s.ended, message="the create's answer")
            self.assertEqual(s.status, 201, bytes(s.data))
            self.assertEqual(json.loads(bytes(s.data))["metadata"]["name"], name)

    def test_a_stream_that_is_not_read_stalls_only_itself(self):
        """Two watches on one connection; the client stops opening the first one's window.
        The second gets every event while the first holds at most its window, and other
        requests on the connection are answered at once."""
        client = self.h2(window=16384)
        stalled = client.request("GET", "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0")
        reader = client.request("GET", "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0")
        client.stalled.add(stalled.id)
        client.wait(lambda: stalled.status == 200 and reader.status == 200, message="both watches answered")
        count = 120
        for i in range(count):  # 120 events of ~4 KB: far beyond the stalled stream's 16 KiB window
            status, out = clients.request(self.upstream + "/api/v1/namespaces/default/configmaps", "POST",
                                          configmap("flood-%03d" % i, 4000))
            self.assertEqual(status, 201, out)
        client.wait(lambda: bytes(reader.data).count(b'"flood-') >= count, timeout=20,
                    message="every event on the stream that is read")
        self.assertLessEqual(stalled.received, 16384)
        started = time.time()
        got = client.get("/api/v1/namespaces/default/pods/web-0?resourceVersion=0")
        self.assertEqual(got.status, 200)
        self.assertLess(time.time() - started, 2.0)
        self.assertIsNone(reader.reset)

    def test_protocol_errors_end_the_connection_and_the_proxy_keeps_serving(self):
        """Garbage after the preface: GOAWAY (PROTOCOL_ERROR or FRAME_SIZE_ERROR) and the
        connection closes; the next connection is served."""
        client = self.h2()
        client.sock.sendall(b"\x00\x00\x04\x99\x00\x00\x00\x00\x01garbage-garbage-garbage")
        deadline = time.time() + 5
        while client.pump() and time.time() < deadline:
            pass
        self.assertTrue(client.closed or client.goaway is not None)
        self.assertEqual(self.h2().get("/version").status, 200)

    def test_sigterm_ends_watches_with_goaway_and_the_proxy_exits(self):
        """Shutdown as Go's http2 server does it: GOAWAY, the open watch ends cleanly
        (END_STREAM, not a reset), and the process exits 0."""
        proxy = self.start_proxy()
        client = self.h2(proxy)
        watch = client.request("GET", "/api/v1/namespaces/default/pods?watch=1&resourceVersion=0")
        client.wait(lambda: watch.status == 200 and b"ADDED" in bytes(watch.data), message="the watch's events")
        proxy.signal(signal.SIGTERM)
        deadline = time.time() + 10
        while not watch.ended and watch.reset is None and client.pump() and time.time() < deadline:
            pass
        # GOAWAY first, as Go's server sends it (python3-h2 reads nothing after it), and
        # never a reset of the watch.
        self.assertIsNotNone(client.goaway)
        self.assertIsNone(watch.reset)
        proxy.proc.wait(10)
        self.assertEqual(proxy.proc.returncode, 0, proxy.stderr())

    def test_header_memory_follows_the_wire(self):
        """20 watches, each with 250 references to one 4,000-byte HPACK entry: 4 KB on the
        wire, 1 MB decoded. The proxy keeps references on nghttp2's buffers, as Go's strings
        share the table's bytes: far less than the decoded megabyte per stream (the bridge
        that copied the fields cost 1.7-2.2 MiB each)."""
        client = self.h2()
        filler = [("x-filler", "f" * 4000)] * 250
        path = "/api/v1/namespaces/default/pods?watch=1&resourceVersion=0"
        warm = client.request("GET", path, filler)
        client.wait(lambda: warm.status == 200, message="the first watch")
        rss0 = harness.rss_kib(self.plain.pid)
        watches = [client.request("GET", path, filler) for _ in range(20)]
        client.wait(lambda: all(w.status == 200 and b"ADDED" in bytes(w.data) for w in watches), timeout=20,
                    message="every watch's events")
        per_watch = (harness.rss_kib(self.plain.pid) - rss0) / len(watches)
        self.assertLess(per_watch, 256, "KiB of RSS per watch with 1 MB of decoded headers")

    def test_a_header_list_over_the_limit_gets_gos_431(self):
        """Over SETTINGS_MAX_HEADER_LIST_SIZE (--max-header-bytes plus 320, counted as Go
        counts it), Go's http2 server drops the rest of the list and answers 431 with its
        own page; the connection goes on."""
        client = self.h2()
        s = client.request("GET", "/api/v1/pods", [("x-filler", "f" * 4000)] * 300)
        client.wait(lambda: s.ended or s.reset is not None, message="the answer")
        self.assertEqual(s.status, 431)
        self.assertEqual(bytes(s.data), b"<h1>HTTP Error 431</h1><p>Request Header Field(s) Too Large</p>")
        self.assertEqual(s.headers.get("content-type"), "text/html; charset=utf-8")
        self.assertEqual(client.get("/version").status, 200)

    def test_a_body_left_unread_ends_with_a_reset_without_error(self):
        """An answer that does not read the request body (a local endpoint's 405): after
        its END_STREAM, RST_STREAM with NO_ERROR, as Go's server sends, so the client stops
        sending; the connection goes on."""
        client = self.h2()
        stream_id = client.conn.get_next_available_stream_id()
        client.conn.send_headers(stream_id, [(":method", "POST"), (":path", "/healthz"), (":scheme", "http"),
                                             (":authority", "127.0.0.1")])
        client.conn.send_data(stream_id, b"x" * 100)
        client.sock.sendall(client.conn.data_to_send())
        from h2client import Stream
        s = client.streams[stream_id] = Stream(stream_id)
        client.wait(lambda: s.reset is not None, message="the reset")
        self.assertEqual(s.status, 405)
        self.assertTrue(s.ended)
        self.assertEqual(s.reset, 0)  # NO_ERROR
        self.assertEqual(client.get("/version").status, 200)

    def test_requests_and_connections_are_counted(self):
        client = self.h2()
        for _ in range(3):
            self.assertEqual(client.get("/api/v1/pods?resourceVersion=0").status, 200)
        metrics = http11(self.plain.port, "/metrics")[2].decode()
        self.assertRegex(metrics, r'kube_cache_proxy_http2_connections_total\{negotiation="prior_knowledge"\} [1-9]')
        self.assertRegex(metrics, r"kube_cache_proxy_http2_streams_total [3-9]|kube_cache_proxy_http2_streams_total \d\d")

    def test_a_large_answer_whose_end_closes_its_stream_is_counted_as_answered(self):
        """A LIST larger than a stream's queue is written from where it lies, and its last
        frame's END_STREAM closes the stream as it goes out: the request is still one
        answered LIST (it was counted as a client gone, and not at all in requests_total)."""
        for i in range(4):  # ~240 KB of configmaps: past the stream's 64 KiB queue
            clients.request(self.upstream + "/api/v1/namespaces/default/configmaps", "POST",
                            configmap("large-answer-%d" % i, 60000))
        path = "/api/v1/namespaces/default/configmaps?resourceVersion=0"
        # A GET, not a LIST, waits for the cache: a request is counted just after its
        # answer, so a LIST here could be counted after `before` was read.
        harness.wait_for(lambda: http11(self.plain.port, "/api/v1/namespaces/default/configmaps/large-answer-3"
                                        "?resourceVersion=0")[0] == 200, timeout=10, message="cached")

        def lists():
            metrics = http11(self.plain.port, "/metrics")[2].decode()
            return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                       if line.startswith("kube_cache_proxy_requests_total{") and 'code="200"' in line
                       and 'verb="list"' in line and 'resource="configmaps"' in line)
        before = lists()
        client = self.h2()
        for _ in range(3):
            got = client.get(path)
            self.assertEqual(got.status, 200)
            self.assertGreater(len(got.data), 240000)
        harness.wait_for(lambda: lists() - before >= 3, timeout=10, message="the three LISTs counted")
        self.assertEqual(lists() - before, 3)


if __name__ == "__main__":
    unittest.main()
