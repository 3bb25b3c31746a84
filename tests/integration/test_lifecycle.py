"""Process lifecycle: startup line, SIGTERM with an open stream, second signal."""
import http.client
import json
import signal
import socket
import unittest

import harness


class LifecycleTest(unittest.TestCase):
    def setUp(self):
        self.procs = harness.Processes()
        self.addCleanup(self.procs.stop_all)
        self.upstream = self.procs.stub_upstream()
        self.proxy = self.procs.proxy("http://127.0.0.1:%d" % self.upstream.port)

    def open_stream(self):
        conn = http.client.HTTPConnection(self.proxy.host, self.proxy.port, timeout=10)
        self.addCleanup(conn.close)
        conn.request("GET", "/stream?lines=100000&interval_ms=100")
        r = conn.getresponse()
        self.assertEqual(r.status, 200)
        json.loads(r.readline())
        return r

    def test_sigterm_ends_open_streams_cleanly_and_exits_within_5s(self):
        stream = self.open_stream()
        self.proxy.signal(signal.SIGTERM)
        # The stream ends with its terminating chunk (a clean end, not an error).
        while stream.readline():
            pass
        # The stream (100,000 lines 100 ms apart) would run for hours: the proxy ended it.
        self.proxy.proc.wait(5)
        self.assertEqual(self.proxy.proc.returncode, 0, self.proxy.stderr())

    def open_connections_are(self, n):
        _, _, body = harness.http_get(self.proxy.host, self.proxy.port, "/metrics")
        return ("kube_cache_proxy_open_connections %d" % (n + 1)) in body.decode()  # +1: this scrape

    def test_an_in_flight_request_still_gets_its_answer_during_the_drain(self):
        import threading
        result = {}

        def slow_get():
            result["answer"] = harness.http_get(self.proxy.host, self.proxy.port, "/slow?ms=700")

        client = threading.Thread(target=slow_get)
        client.start()
        harness.wait_for(lambda: self.open_connections_are(1), message="request in flight")
        self.proxy.signal(signal.SIGTERM)
        client.join(10)
        status, headers, body = result["answer"]
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("Connection"), "close")
        self.proxy.proc.wait(5)
        self.assertEqual(self.proxy.proc.returncode, 0)

    def test_a_connection_accepted_before_the_signal_gets_its_first_request_served(self):
        # net/http's Shutdown: a connection that has not sent its first request yet (StateNew)
        # is not idle; its request, sent after the signal, is answered with Connection: close.
        s = socket.create_connection((self.proxy.host, self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        harness.wait_for(lambda: self.open_connections_are(1), message="connection accepted")
        self.proxy.signal(signal.SIGTERM)
        s.sendall(b"GET /slow?ms=10 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answer = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        head = answer.split(b"\r\n\r\n", 1)[0].decode()
        self.assertTrue(head.startswith("HTTP/1.1 200"), answer[:300])
        self.assertIn("connection: close", head.lower())
        self.proxy.proc.wait(5)
        self.assertEqual(self.proxy.proc.returncode, 0)

    def test_a_connection_that_sends_nothing_is_closed_unanswered_by_the_end_of_the_drain(self):
        # ...and one that stays silent is closed unanswered: once it has been open 5 s, or
        # when the drain (3/5 of --shutdown-timeout) ends, whichever comes first.
        s = socket.create_connection((self.proxy.host, self.proxy.port), timeout=30)
        self.addCleanup(s.close)
        harness.wait_for(lambda: self.open_connections_are(1), message="connection accepted")
        self.proxy.signal(signal.SIGTERM)
        self.assertEqual(s.recv(1), b"")  # closed without an answer
        self.proxy.proc.wait(15)
        self.assertEqual(self.proxy.proc.returncode, 0)

    def test_sigterm_ends_upgraded_connections(self):
        s = socket.create_connection((self.proxy.host, self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        s.sendall(b"GET /api/v1/namespaces/a/pods/p/portforward?ports=80 HTTP/1.1\r\nHost: localhost\r\n"
                  b"Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
        self.assertTrue(head.startswith(b"HTTP/1.1 101"), head)
        self.proxy.signal(signal.SIGTERM)
        # The tunnel has no end of its own: only the proxy's drain closes it.
        while s.recv(4096):
            pass
        self.proxy.proc.wait(5)
        self.assertEqual(self.proxy.proc.returncode, 0)

    def test_a_second_signal_during_the_drain_exits_at_once(self):
        # An upload that stalls mid-body keeps its session busy, so the drain lasts.
        upload = socket.create_connection((self.proxy.host, self.proxy.port), timeout=10)
        self.addCleanup(upload.close)
        upload.sendall(b"POST /api/v1/namespaces/a/configmaps HTTP/1.1\r\nHost: localhost\r\n"
                       b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{")

        harness.wait_for(lambda: self.open_connections_are(1), message="upload in progress")
        self.proxy.signal(signal.SIGINT)
        harness.wait_for(lambda: "shutting down" in self.proxy.stderr(), message="first signal handled")
        self.proxy.signal(signal.SIGINT)
        self.proxy.proc.wait(2)
        # Exit status 1: it did not wait for the stalled upload to drain (that exits 0).
        self.assertEqual(self.proxy.proc.returncode, 1)

    def test_json_log_format_writes_one_json_object_per_line(self):
        proxy = self.procs.proxy("http://127.0.0.1:%d" % self.upstream.port, "--log-format", "json", "-v", "2")
        harness.http_get(proxy.host, proxy.port, '/api/v1/pods?labelSelector=app%3D"x"')
        harness.wait_for(lambda: "access" in proxy.stderr(), message="access log line")
        proxy.stop()
        lines = [l for l in proxy.stderr().splitlines() if l.strip()]
        records = [json.loads(l) for l in lines]
        self.assertTrue(any(r["msg"].startswith("access verb=GET") for r in records), lines)
        self.assertTrue(all({"ts", "level", "msg"} <= set(r) for r in records))

    def test_version_flag_prints_the_version(self):
        import subprocess
        out = subprocess.run([harness.PROXY_BIN, "--version"], capture_output=True, text=True, check=True).stdout
        self.assertTrue(out.startswith("kube-cache-proxy "), out)


if __name__ == "__main__":
    unittest.main()
