"""Bad input and a missing upstream: each gets a clear answer, and the proxy
keeps serving the next request."""
import http.client
import json
import socket
import unittest

import harness


class BadInputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.procs = harness.Processes()
        cls.addClassCleanup(cls.procs.stop_all)
        cls.upstream = cls.procs.stub_upstream()
        cls.proxy = cls.procs.proxy("http://127.0.0.1:%d" % cls.upstream.port)

    def assert_still_serving(self):
        status, _, body = harness.http_get(self.proxy.host, self.proxy.port, "/api/v1/namespaces")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["path"], "/api/v1/namespaces")

    def test_a_half_closed_connection_is_a_client_gone_as_go_sees_it(self):
        """A client that shuts its sending side has left, as Go's net/http server sees it:
        the EOF on the connection cancels the request's context (connReader's background
        read), so that the pass-through's upstream request ends at once instead of running
        for no one. Nothing is answered on that connection, and the proxy keeps serving."""
        import time
        started = time.monotonic()
        answer = harness.raw_exchange(self.proxy.host, self.proxy.port,
                                      b"GET /slow?ms=5000 HTTP/1.1\r\nHost: localhost\r\n\r\n", shut_wr=True)
        self.assertEqual(answer, b"")
        self.assertLess(time.monotonic() - started, 4.0)  # not held for the upstream's 5 s
        self.assert_still_serving()

    def test_an_oversized_header_gets_431_like_go_net_http(self):
        big = b"X-Big: " + b"a" * (2 << 20) + b"\r\n"
        with socket.create_connection((self.proxy.host, self.proxy.port), timeout=10) as s:
            try:
                s.sendall(b"GET /api/v1/pods HTTP/1.1\r\nHost: localhost\r\n" + big + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the proxy may answer and close before reading everything
            answer = s.recv(65536)
        self.assertTrue(answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large"), answer[:100])
        self.assert_still_serving()

    def test_headers_just_under_the_limit_are_forwarded(self):
        # 15 x 60 KB: under the 1 MiB limit, and within what the stub's parser takes.
        headers = {"X-Big-%d" % i: "b" * 60000 for i in range(15)}
        status, _, body = harness.http_get(self.proxy.host, self.proxy.port, "/api/v1/pods", headers=headers)
        self.assertEqual(status, 200)
        report = json.loads(body)
        self.assertEqual(sum(1 for k, _ in report["headers"] if k.startswith("X-Big-")), 15)

    def test_a_single_200KB_header_value_gets_an_answer(self):
        # Longer than Beast's 64 KiB field storage; Go accepts it, so the proxy
        # forwards it (the stub itself then refuses lines over 64 KiB).
        status, _, _ = harness.http_get(self.proxy.host, self.proxy.port, "/api/v1/pods",
                                        headers={"X-Big": "a" * 200000})
        self.assertIn(status, (431, 503))
        self.assert_still_serving()

    def test_a_malformed_request_line_gets_400_and_a_closed_connection(self):
        answer = harness.raw_exchange(self.proxy.host, self.proxy.port, b"THIS IS NOT HTTP\r\n\r\n")
        self.assertTrue(answer.startswith(b"HTTP/1.1 400 Bad Request"), answer[:100])
        self.assert_still_serving()

    def test_a_malformed_chunked_body_gets_400(self):
        answer = harness.raw_exchange(
            self.proxy.host, self.proxy.port,
            b"POST /api/v1/namespaces/a/configmaps HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        self.assertTrue(answer.startswith(b"HTTP/1.1 400") or answer == b"", answer[:100])
        self.assert_still_serving()


class UnreachableUpstreamTest(unittest.TestCase):
    def test_an_unreachable_upstream_gives_a_503_status_E1_and_the_proxy_keeps_serving(self):
        procs = harness.Processes()
        self.addCleanup(procs.stop_all)
        dead_port = harness.free_port()  # nothing listens here
        proxy = procs.proxy("https://127.0.0.1:%d" % dead_port)
        conn = http.client.HTTPConnection(proxy.host, proxy.port, timeout=10)
        self.addCleanup(conn.close)
        for _ in range(2):  # same connection: the answer keeps it alive
            conn.request("GET", "/api/v1/namespaces/default/pods")
            r = conn.getresponse()
            self.assertEqual(r.status, 503)
            self.assertEqual(r.getheader("Content-Type"), "application/json")
            status = json.loads(r.read())
            self.assertEqual(status["kind"], "Status")
            self.assertEqual(status["apiVersion"], "v1")
            self.assertEqual(status["status"], "Failure")
            self.assertEqual(status["reason"], "ServiceUnavailable")
            self.assertEqual(status["code"], 503)
            self.assertIn("error trying to reach upstream https://127.0.0.1:%d" % dead_port, status["message"])
            self.assertIn("connection refused", status["message"])
        conn.request("GET", "/healthz")
        r = conn.getresponse()
        self.assertEqual((r.status, r.read()), (200, b"ok"))
        _, _, metrics = harness.http_get(proxy.host, proxy.port, "/metrics")
        self.assertIn('kube_cache_proxy_upstream_errors_total{kind="connect"} 2', metrics.decode())

    def test_an_upstream_connect_timeout_gives_a_504_timeout_status_E2(self):
        # A listener whose accept queue is full drops further SYNs, so connect hangs.
        listener = socket.socket()
        self.addCleanup(listener.close)
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(3):
            filler = socket.socket()
            self.addCleanup(filler.close)
            filler.setblocking(False)
            try:
                filler.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
        procs = harness.Processes()
        self.addCleanup(procs.stop_all)
        proxy = procs.proxy("https://127.0.0.1:%d" % port, "--connect-timeout", "300ms")
        status, _, body = harness.http_get(proxy.host, proxy.port, "/api/v1/pods")
        self.assertEqual(status, 504)
        answer = json.loads(body)
        self.assertEqual(answer["reason"], "Timeout")
        self.assertIn("error trying to reach upstream https://127.0.0.1:%d" % port, answer["message"])
        self.assertIn("i/o timeout", answer["message"])
        _, _, metrics = harness.http_get(proxy.host, proxy.port, "/metrics")
        self.assertIn('kube_cache_proxy_upstream_errors_total{kind="timeout"} 1', metrics.decode())


if __name__ == "__main__":
    unittest.main()
