"""Request limits (issue #8, hardening): body size, head size and header count, the
read-header and idle timeouts (slowloris), and concurrent watches per client and in
total. Each limit answers as kube-apiserver does, and the proxy keeps serving after it.

The limits are set small by flag so that every test takes at most a few seconds.
"""
import http.client
import json
import os
import re
import select
import socket
import time
import unittest

import clients
import harness

BODY_LIMIT = 4096
HEADER_LIMIT = 8192          # Go adds 4096 for the request line
READ_HEADER_TIMEOUT = 1.0    # seconds
IDLE_TIMEOUT = 4.0           # longer than READ_HEADER_TIMEOUT, so the two can be told apart


def split_answer(answer):
    head, body = answer.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    return lines[0], headers, body


def read_sized_answer(sock):
    """Reads one answer with a Content-Length from a kept-alive connection."""
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(65536)
    status, headers, body = split_answer(answer)
    while len(body) < int(headers["content-length"]):
        body += sock.recv(65536)
    return status, headers, body


def trickle_until_closed(sock, data, interval=0.1, give_up=15.0):
    """Sends `data` one byte per `interval` until the server closes the connection.
    Returns the bytes the server sent."""
    received = b""
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < give_up:
        readable, _, _ = select.select([sock], [], [], interval)
        if readable:
            try:
                d = sock.recv(65536)
            except ConnectionResetError:
                d = b""
            if not d:
                return received
            received += d
            continue
        try:
            sock.sendall(data[i % len(data):i % len(data) + 1])
        except (BrokenPipeError, ConnectionResetError):
            return received
        i += 1
    raise AssertionError("the server kept a trickling connection open for %.0fs" % give_up)


class BodyHeaderAndTimeoutLimitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.procs = harness.Processes()
        cls.addClassCleanup(cls.procs.stop_all)
        cls.upstream = cls.procs.stub_upstream()
        cls.proxy = cls.procs.proxy("http://127.0.0.1:%d" % cls.upstream.port, "--cache-on-demand=false",
                                    "--max-request-body-bytes", str(BODY_LIMIT),
                                    "--max-header-bytes", str(HEADER_LIMIT),
                                    "--read-header-timeout", "%gs" % READ_HEADER_TIMEOUT,
                                    "--idle-timeout", "%gs" % IDLE_TIMEOUT)

    def connect(self):
        return socket.create_connection((self.proxy.host, self.proxy.port), timeout=10)

    def timeouts(self):
        """{timeout: count} of kube_cache_proxy_connection_timeouts_total: which timeout
        closed a connection, so that tests need not time the close themselves."""
        status, _, body = harness.http_get(self.proxy.host, self.proxy.port, "/metrics")
        self.assertEqual(status, 200)
        out = {"idle": 0, "read_header": 0}
        for m in re.finditer(r'^kube_cache_proxy_connection_timeouts_total\{timeout="(\w+)"\} (\S+)$', body.decode(), re.M):
            out[m.group(1)] = int(float(m.group(2)))
        return out

    def assert_closed_by(self, before, timeout):
        """The connection just closed was closed by `timeout` ("idle" or "read_header"), not the other."""
        # Beast closes the socket when the timer fires and completes the read after it, so
        # a busy proxy may answer this client's next request before it counts the timeout.
        other = "idle" if timeout == "read_header" else "read_header"
        harness.wait_for(lambda: self.timeouts()[timeout] >= before[timeout] + 1, timeout=5, interval=0.05,
                         message="the %s timeout counted" % timeout)
        after = self.timeouts()
        self.assertEqual(after[timeout], before[timeout] + 1, after)
        self.assertEqual(after[other], before[other], after)

    def assert_still_serving(self):
        status, _, body = harness.http_get(self.proxy.host, self.proxy.port, "/api/v1/namespaces")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["path"], "/api/v1/namespaces")

    def post(self, path, body, extra=b""):
        conn = http.client.HTTPConnection(self.proxy.host, self.proxy.port, timeout=10)
        try:
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def assert_413(self, status, headers, body):
        # AM pkg/api/errors NewRequestEntityTooLargeError, as handlers/rest.go limitedReadBody words it (E1, E2).
        self.assertEqual(status, 413)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(headers.get("connection"), "close")
        self.assertEqual(json.loads(body), {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Request entity too large: limit is %d" % BODY_LIMIT,
            "reason": "RequestEntityTooLarge", "code": 413})

    def test_a_body_over_the_limit_gets_413_request_entity_too_large(self):
        status, headers, body = self.post("/api/v1/namespaces/default/configmaps", b"x" * (BODY_LIMIT + 1))
        self.assert_413(status, headers, body)
        self.assert_still_serving()

    def test_a_chunked_body_over_the_limit_gets_413(self):
        with self.connect() as s:
            piece = b"y" * 1500
            chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
            s.sendall(b"PUT /api/v1/namespaces/default/configmaps/c HTTP/1.1\r\nHost: localhost\r\n"
                      b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 4 + b"0\r\n\r\n")
            status_line, headers, body = split_answer(harness.read_until_close(s))
        self.assertEqual(status_line, "HTTP/1.1 413 Request Entity Too Large")
        self.assert_413(413, headers, body)
        self.assert_still_serving()

    def test_a_body_at_the_limit_is_forwarded(self):
        status, _, body = self.post("/api/v1/namespaces/default/configmaps", b"z" * BODY_LIMIT)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["body_size"], BODY_LIMIT)

    def test_bodies_of_connect_subresources_and_non_api_paths_are_not_limited(self):
        # The apiserver streams these (proxy, exec, ...) instead of decoding them.
        for path in ("/api/v1/namespaces/default/services/web/proxy/upload", "/not-an-api-path"):
            status, _, body = self.post(path, b"p" * (3 * BODY_LIMIT))
            self.assertEqual(status, 200, path)
            self.assertEqual(json.loads(body)["body_size"], 3 * BODY_LIMIT, path)

    def test_a_head_over_the_limit_gets_431_like_go_net_http(self):
        with self.connect() as s:
            s.sendall(b"GET /api/v1/pods HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * (HEADER_LIMIT + 4096) + b"\r\n\r\n")
            answer = harness.read_until_close(s)
        self.assertTrue(answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large"), answer[:100])
        self.assert_still_serving()

    def test_pipelined_heads_are_answered_in_order_then_a_malformed_one_gets_400(self):
        # Heads already whole in the connection's buffer are parsed without waiting for
        # the socket; they must be answered as those read one by one are.
        first = b"GET /api/v1/namespaces HTTP/1.1\r\nHost: localhost\r\n\r\n"
        second = b"GET /api/v1/pods HTTP/1.1\r\nHost: localhost\r\n\r\n"
        bad = b"GET /api/v1/nodes HTTP/1.1\r\nHost: localhost\r\nNo colon here\r\n\r\n"
        big = b"GET /api/v1/pods HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * (HEADER_LIMIT + 4096) + b"\r\n\r\n"
        for pipeline, paths, last in ((first + second + bad, ["/api/v1/namespaces", "/api/v1/pods"], b"HTTP/1.1 400 "),
                                      (first + big, ["/api/v1/namespaces"], b"HTTP/1.1 431 ")):
            with self.connect() as s:
                s.sendall(pipeline)
                rest = harness.read_until_close(s)
            answered = []
            for _ in paths:
                status, headers, rest = split_answer(rest)
                self.assertEqual(status, "HTTP/1.1 200 OK")
                length = int(headers["content-length"])
                answered.append(json.loads(rest[:length])["path"])
                rest = rest[length:]
            self.assertEqual(answered, paths)
            self.assertTrue(rest.startswith(last), rest[:100])
        self.assert_still_serving()

    def test_many_small_headers_count_against_the_same_limit(self):
        # Go's net/http (and so the apiserver) bounds the head's bytes, not the number
        # of header lines; so does the proxy.
        many = b"".join(b"X-H-%d: v\r\n" % i for i in range(2000))  # ~24 KiB
        with self.connect() as s:
            s.sendall(b"GET /api/v1/pods HTTP/1.1\r\nHost: localhost\r\n" + many + b"\r\n")
            answer = harness.read_until_close(s)
        self.assertTrue(answer.startswith(b"HTTP/1.1 431 "), answer[:100])
        # Under the bound: forwarded (90: the stub upstream, Python's http.server, takes 100 at most).
        few = {"X-H-%d" % i: "v" * 60 for i in range(90)}  # ~6.3 KiB
        status, _, body = harness.http_get(self.proxy.host, self.proxy.port, "/api/v1/pods", headers=few)
        self.assertEqual(status, 200)
        self.assertEqual(sum(1 for k, _ in json.loads(body)["headers"] if k.startswith("X-H-")), 90)
        self.assert_still_serving()

    def test_a_head_trickling_in_is_cut_off_after_the_read_header_timeout(self):
        before = self.timeouts()
        with self.connect() as s:
            received = trickle_until_closed(s, b"GET /api/v1/pods HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"s" * 1000)
        # Closed without an answer, as Go's server does on a header timeout.
        self.assertEqual(received, b"")
        self.assert_closed_by(before, "read_header")
        self.assert_still_serving()

    def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(self):
        before = self.timeouts()
        with self.connect() as s:
            s.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: localhost\r\n\r\n")
            read_sized_answer(s)
            rest = harness.read_until_close(s, timeout=IDLE_TIMEOUT * 4)
        self.assertEqual(rest, b"")
        self.assert_closed_by(before, "idle")
        self.assert_still_serving()

    def test_after_an_idle_wait_the_next_head_gets_the_read_header_timeout(self):
        # Go's semantics: the idle timeout lasts until the next request's first byte;
        # from there the head has READ_HEADER_TIMEOUT, not what is left of the idle time.
        before = self.timeouts()
        with self.connect() as s:
            s.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: localhost\r\n\r\n")
            read_sized_answer(s)
            received = trickle_until_closed(s, b"GET /api/v1/pods HTTP/1.1\r\nX-Slow: " + b"s" * 1000)
        self.assertEqual(received, b"")
        self.assert_closed_by(before, "read_header")


def open_watch(port, path, source):
    """A watch from the client address `source`. Returns (status, headers, body, conn):
    conn is left open (the stream unread) when the watch was accepted."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    conn.request("GET", path)
    r = conn.getresponse()
    headers = {k.lower(): v for k, v in r.getheaders()}
    if r.status == 200:
        return r.status, headers, b"", conn
    body = r.read()
    conn.close()
    return r.status, headers, body, None


def close_watch(conn):
    try:
        conn.sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()


class WatchLimitsTest(unittest.TestCase):
    """Loopback is 127.0.0.0/8, so clients on 127.0.0.1, .2 and .3 are three clients."""

    PATH = "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=60"

    def setUp(self):
        self.procs = harness.Processes()
        self.addCleanup(self.procs.stop_all)
        self.api = clients.start_apiserver(self.procs)
        self.upstream = "http://127.0.0.1:%d" % self.api.port
        self.open = []
        self.addCleanup(lambda: [close_watch(c) for c in self.open])

    def watch(self, port, source):
        status, headers, body, conn = open_watch(port, self.PATH, source)
        if conn:
            self.open.append(conn)
        return status, headers, body

    def assert_429(self, status, headers, body):
        # kube-apiserver's max-in-flight rejection (filters/maxinflight.go): plain text from
        # Go's http.Error with Retry-After: 1; client-go waits and retries on it.
        self.assertEqual(status, 429)
        self.assertEqual(headers["retry-after"], "1")
        self.assertEqual(headers["content-type"], "text/plain; charset=utf-8")
        self.assertEqual(headers["x-content-type-options"], "nosniff")
        self.assertEqual(body, b"Too many requests, please try again later.\n")

    def test_watches_beyond_the_per_client_and_total_bounds_get_429_with_retry_after(self):
        proxy = self.procs.proxy(self.upstream, "--cache-on-demand=false", "--max-watches-per-client", "2",
                                 "--max-inflight-watches", "3")
        self.assertEqual(self.watch(proxy.port, "127.0.0.1")[0], 200)
        self.assertEqual(self.watch(proxy.port, "127.0.0.1")[0], 200)
        self.assert_429(*self.watch(proxy.port, "127.0.0.1"))
        # Another client has its own allowance, up to the total.
        self.assertEqual(self.watch(proxy.port, "127.0.0.2")[0], 200)
        self.assert_429(*self.watch(proxy.port, "127.0.0.3"))
        # Other requests are not limited.
        status, _, _ = harness.http_get("127.0.0.1", proxy.port, "/api/v1/namespaces/default/pods")
        self.assertEqual(status, 200)
        # An ended watch frees its slot once the proxy sees its client go.
        close_watch(self.open.pop(0))
        harness.wait_for(lambda: self.watch(proxy.port, "127.0.0.1")[0] == 200, timeout=10,
                         message="a watch slot freed by a closed watch")

    def test_watches_served_from_the_cache_are_counted_too(self):
        proxy = self.procs.proxy(self.upstream, "--cache", "pods", "--max-watches-per-client", "1")
        harness.wait_for(lambda: harness.http_get("127.0.0.1", proxy.port, "/readyz")[0] == 200, timeout=20,
                         message="the pods cache to sync")
        status, headers, _ = self.watch(proxy.port, "127.0.0.1")
        self.assertEqual(status, 200)
        self.assertNotEqual(headers.get("x-kube-cache-proxy"), "upstream")  # cached watches carry no such header
        self.assert_429(*self.watch(proxy.port, "127.0.0.1"))
        self.assertEqual(self.watch(proxy.port, "127.0.0.2")[0], 200)


if __name__ == "__main__":
    unittest.main()


class ConnectionAndRequestLimitsTest(unittest.TestCase):
    """Issue 16, finding 8 and lower: connections are bounded per client address and in
    total (a new one beyond is closed at once), and requests in flight as the apiserver's
    max-in-flight filter bounds them (its 429); watches and health checks do not count."""

    def setUp(self):
        self.procs = harness.Processes()
        self.addCleanup(self.procs.stop_all)
        self.api = clients.start_apiserver(self.procs, "--enable-control")
        self.upstream = "http://127.0.0.1:%d" % self.api.port
        self.socks = []
        self.addCleanup(lambda: [s.close() for s in self.socks])

    def connect(self, port, source):
        s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
        self.socks.append(s)
        return s

    @staticmethod
    def serves(s):
        """True when the connection answers a request; False when the proxy closed it."""
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            return s.recv(1024).startswith(b"HTTP/1.1 200")
        except OSError:
            return False

    def refusals(self, port, limit):
        metrics = harness.http_get("127.0.0.1", port, "/metrics")[2].decode()
        prefix = 'kube_cache_proxy_limit_refusals_total{limit="%s"} ' % limit
        return sum(float(line[len(prefix):]) for line in metrics.splitlines() if line.startswith(prefix))

    def test_connections_beyond_the_per_client_and_total_bounds_are_closed(self):
        proxy = self.procs.proxy(self.upstream, "--cache-on-demand=false", "--max-connections-per-client", "2",
                                 "--max-connections", "3")
        first = [self.connect(proxy.port, "127.0.0.2") for _ in range(2)]
        self.assertTrue(all(self.serves(s) for s in first))
        self.assertFalse(self.serves(self.connect(proxy.port, "127.0.0.2")))
        self.assertTrue(self.serves(self.connect(proxy.port, "127.0.0.3")))  # its own allowance, up to the total
        self.assertFalse(self.serves(self.connect(proxy.port, "127.0.0.4")))
        first[0].close()
        harness.wait_for(lambda: self.serves(self.connect(proxy.port, "127.0.0.2")), timeout=10,
                         message="a connection slot freed by a closed connection")
        for s in self.socks:
            s.close()

        def refused_twice():
            try:  # its own connection counts too, once the proxy has seen the others go
                return self.refusals(proxy.port, "connections") >= 2
            except OSError:
                return False
        harness.wait_for(refused_twice, timeout=10, message="two refusals counted")

    def test_requests_in_flight_beyond_the_bound_get_the_apiservers_429(self):
        proxy = self.procs.proxy(self.upstream, "--cache-on-demand=false", "--max-requests-inflight", "2")
        clients.request(self.upstream + "/control/slow?ms=1500", "POST", {})
        self.addCleanup(clients.request, self.upstream + "/control/slow?ms=0", "POST", {})
        # A watch is long-running: it holds no request slot.
        status, _, _, watch = open_watch(proxy.port, "/api/v1/namespaces/default/configmaps?watch=true", "127.0.0.1")
        self.assertEqual(status, 200)
        self.addCleanup(close_watch, watch)
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda _: harness.http_get("127.0.0.1", proxy.port,
                                                               "/api/v1/namespaces/default/configmaps"), range(6)))
            # Health checks are never refused, even while the bound is reached.
            self.assertEqual(harness.http_get("127.0.0.1", proxy.port, "/healthz")[0], 200)
        statuses = sorted(a[0] for a in answers)
        self.assertEqual(statuses, [200, 200, 429, 429, 429, 429], statuses)
        for status, headers, body in answers:
            if status == 429:
                headers = {k.lower(): v for k, v in dict(headers).items()}
                self.assertEqual(headers["retry-after"], "1")
                self.assertEqual(body, b"Too many requests, please try again later.\n")
        self.assertEqual(self.refusals(proxy.port, "requests"), 4)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class AcceptBackoffTest(unittest.TestCase):
    """Issue 16 (lower): out of file descriptors, the accept loop backs off as Go's server
    does (5 ms doubling to 1 s) instead of spinning a core; it serves again once they free."""

    def test_out_of_descriptors_the_accept_loop_backs_off_instead_of_spinning(self):
        processes = harness.Processes()
        self.addCleanup(processes.stop_all)
        api = clients.start_apiserver(processes)
        # No connection bound (its default, half the limit, would keep descriptors free).
        proxy = processes.start(["prlimit", "--nofile=64:64", harness.PROXY_BIN, "--listen", "127.0.0.1:0",
                                 "--upstream", "http://%s:%d" % (api.host, api.port), "--cache-on-demand=false",
                                 "--max-connections", "0"])
        harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/healthz")[0] == 200, timeout=30,
                         message="/healthz 200")
        socks = []
        self.addCleanup(lambda: [s.close() for s in socks])
        for _ in range(100):
            socks.append(socket.create_connection((proxy.host, proxy.port), timeout=5))
        time.sleep(0.5)
        before = cpu_seconds(proxy.pid)
        time.sleep(2)
        used = cpu_seconds(proxy.pid) - before
        print("accept backoff: %.2f s of CPU in 2 s out of descriptors" % used)
        self.assertLess(used, 0.5)
        for s in socks:
            s.close()
        socks.clear()
        harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/healthz")[0] == 200, timeout=10,
                         message="/healthz 200 again")
