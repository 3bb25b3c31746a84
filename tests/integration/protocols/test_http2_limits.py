"""HTTP/2 limits of its own (issue 34): what one connection may make the proxy do. The
attacks follow the security review's reproductions, against a sidecar (h2c) and a gateway
(TLS, ALPN h2):

- rapid reset (CVE-2023-44487): 1,000 HEADERS each followed by RST_STREAM in one write on
  one connection, for requests the upstream answers only after 5 s: the reset requests'
  handlers end with them and release their upstream requests, the handlers running for
  one connection never exceed its MAX_CONCURRENT_STREAMS (10 here), the connection gets
  GOAWAY ENHANCE_YOUR_CALM as Go's server sends it, and a bystander's cached and
  passed-through GETs are answered at once meanwhile;
- unfinished header blocks: 50 TLS connections each sending a HEADERS frame without
  END_HEADERS and nothing more are closed at --idle-timeout, as Go closes them (a block
  that never ends opens no stream), and one beside a running watch at the read-header
  timeout;
- CONTINUATION flood: a header block is at most 8 CONTINUATION frames.
"""
import http.client
import json
import socket
import ssl
import struct
import time
import unittest

import h2.config
import h2.connection
import h2.events
import h2.exceptions

import os
import sys

# The shared helpers (harness, clients, h2client) live one folder up.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import clients  # noqa: E402
import harness  # noqa: E402
from h2client import H2Client  # noqa: E402

STREAMS = 10  # --http2-max-streams-per-connection
RESETS = 1000
SLOW_PREFIX = "/api/v1/namespaces/attack/"
ATTACK_PATH = SLOW_PREFIX + "configmaps"  # not cached: passed through, 5 s upstream
CACHED_GET = "/api/v1/namespaces/a/pods/p-a"
PASSED_GET = "/api/v1/namespaces/a"  # namespaces are not cached here
ENHANCE_YOUR_CALM = 11
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# A request's header block from the static table only (:method GET, :scheme http,
# :path /), so that no HPACK state is needed to write it.
HEADER_BLOCK = b"\x82\x86\x84"


def frame(kind, flags, stream_id, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream_id) + payload


def upstream_requests(api_port):
    """The proxy's connections to the upstream that are open (ESTABLISHED, seen from the
    proxy's end): each passed-through request in flight holds one."""
    port = ":%04X" % api_port
    count = 0
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[2].endswith(port) and fields[3] == "01":
                count += 1
    return count


def open_socket(port, context):
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context.wrap_socket(raw, server_hostname="127.0.0.1") if context else raw


def closed_by_peer(sock):
    """True once the server closed `sock` (EOF or reset), reading what it sent meanwhile."""
    sock.setblocking(False)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (BlockingIOError, ssl.SSLWantReadError):
        return False
    except OSError:
        return True
    finally:
        sock.setblocking(True)


class Http2LimitsBase:
    """Subclasses start the proxy and say how a client reaches it (`context`, `attacker`
    and `bystander` headers)."""
    context = None

    @classmethod
    def load(cls, api_url, token=None):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        for path, body in (("/api/v1/namespaces", {"metadata": {"name": "a"}}),
                           ("/api/v1/namespaces", {"metadata": {"name": "attack"}}),
                           ("/api/v1/namespaces/a/pods", clients.pod("p-a"))):
            conn = http.client.HTTPConnection("127.0.0.1", int(api_url.rsplit(":", 1)[1]), timeout=10)
            conn.request("POST", path, body=json.dumps(body), headers=headers)
            status = conn.getresponse().status
            conn.close()
            assert status == 201, (path, status)

    def h2_context(self):
        if not self.context:
            return None
        context = ssl.create_default_context(cafile=self.pki["ca"])
        context.set_alpn_protocols(["h2"])
        return context

    def assert_bystander_served(self):
        # The best of three: a bystander served at once answers in milliseconds, one
        # behind the attacker's requests waits or gets 429.
        for path in (CACHED_GET, PASSED_GET):
            answers = [harness.timed_get(self.proxy.port, path, self.bystander, self.context) for _ in range(3)]
            self.assertEqual([status for status, _ in answers], [200, 200, 200], path)
            best = min(seconds for _, seconds in answers)
            self.assertLess(best, 0.1, "%s answered in %.3f s during the attack" % (path, best))

    def rapid_reset(self):
        """One connection: RESETS requests each reset at once, in one write. Returns the
        connection's socket and h2 state."""
        sock = open_socket(self.proxy.port, self.h2_context())
        self.addCleanup(sock.close)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        fields = [(":method", "GET"), (":path", ATTACK_PATH), (":scheme", "https" if self.context else "http"),
                  (":authority", "127.0.0.1")] + list(self.attacker.items())
        for _ in range(RESETS):
            stream_id = conn.get_next_available_stream_id()
            conn.send_headers(stream_id, fields, end_stream=True)
            conn.reset_stream(stream_id, error_code=8)  # CANCEL
        try:
            sock.sendall(conn.data_to_send())
        except OSError:
            pass  # closed by the server before it read everything: the GOAWAY came
        return sock, conn

    def goaway_code(self, sock, conn, timeout=5):
        """The error code of the GOAWAY the server sent on the attack's connection."""
        deadline = time.monotonic() + timeout
        sock.settimeout(0.2)
        while time.monotonic() < deadline:
            try:
                data = sock.recv(1 << 20)
            except socket.timeout:
                continue
            except OSError:
                return None
            if not data:
                return None
            try:
                events = conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                return None
            for event in events:
                if isinstance(event, h2.events.ConnectionTerminated):
                    return event.error_code
        return None

    def test_rapid_reset_leaves_a_bystander_served_and_the_upstream_free(self):
        clients.request(self.api_url + "/control/slow?ms=5000&path=" + SLOW_PREFIX, "POST", b"")
        self.addCleanup(clients.request, self.api_url + "/control/slow?ms=0", "POST", b"")
        idle = upstream_requests(self.api.port)
        sock, conn = self.rapid_reset()
        # While the upstream would still be thinking about every request the proxy passed
        # on: the handlers of one connection hold at most its stream limit.
        attacked = time.monotonic()
        held = [upstream_requests(self.api.port) - idle for _ in range(20) if time.sleep(0.01) is None]
        self.assertLessEqual(max(held), STREAMS, "upstream requests held by one connection: %s" % held)
        # Reset requests release their upstream requests within 1 s (measured before the
        # bystander's pass-through adds kept-alive upstream connections of its own).
        harness.wait_for(lambda: upstream_requests(self.api.port) <= idle, timeout=attacked + 1 - time.monotonic(),
                         interval=0.02, message="the reset requests' upstream connections released")
        self.assert_bystander_served()
        self.assertEqual(self.goaway_code(sock, conn), ENHANCE_YOUR_CALM)

    def test_reset_requests_release_their_upstream_requests_within_1s(self):
        harness.wait_for(lambda: clients.counters(self.api_url)["slowed"] == 0, timeout=6, interval=0.1,
                         message="no other test's request still at the upstream")
        clients.request(self.api_url + "/control/slow?ms=10000&path=" + SLOW_PREFIX, "POST", b"")
        self.addCleanup(clients.request, self.api_url + "/control/slow?ms=0", "POST", b"")
        idle = upstream_requests(self.api.port)
        client = H2Client("127.0.0.1", self.proxy.port, self.h2_context())
        self.addCleanup(client.close)
        streams = [client.request("GET", ATTACK_PATH, self.attacker) for _ in range(STREAMS)]
        harness.wait_for(lambda: clients.counters(self.api_url)["slowed"] >= STREAMS, timeout=5,
                         message="the requests passed through")
        for s in streams:
            client.conn.reset_stream(s.id, error_code=8)  # CANCEL
        client.sock.sendall(client.conn.data_to_send())
        harness.wait_for(lambda: upstream_requests(self.api.port) <= idle, timeout=1.0, interval=0.02,
                         message="the reset requests' upstream connections released")

    def test_unfinished_header_blocks_are_closed_at_the_idle_timeout(self):
        socks = []
        started = time.monotonic()
        for i in range(50):
            sock = open_socket(self.proxy.port, self.h2_context())
            self.addCleanup(sock.close)
            sock.sendall(PREFACE + frame(0x4, 0, 0) + frame(0x1, 0x1, 1, HEADER_BLOCK))  # no END_HEADERS
            socks.append(sock)
        self.assert_bystander_served()
        harness.wait_for(lambda: all(closed_by_peer(s) for s in socks), timeout=IDLE_TIMEOUT + 3, interval=0.1,
                         message=lambda: "%d of 50 unfinished header blocks closed" % sum(
                             closed_by_peer(s) for s in socks))
        self.assertGreaterEqual(time.monotonic() - started, IDLE_TIMEOUT - 0.5, "closed before the idle timeout")

    def test_unfinished_header_block_beside_a_watch_is_closed_at_the_read_header_timeout(self):
        client = H2Client("127.0.0.1", self.proxy.port, self.h2_context())
        self.addCleanup(client.close)
        watch = client.request("GET", "/api/v1/namespaces/a/pods?watch=1", self.bystander)
        client.wait(lambda: watch.status == 200, message="the watch")
        started = time.monotonic()
        stream_id = client.conn.get_next_available_stream_id()
        client.sock.sendall(frame(0x1, 0x1, stream_id, HEADER_BLOCK))  # no END_HEADERS
        harness.wait_for(lambda: not client.pump(0.1), timeout=READ_HEADER_TIMEOUT + 3, interval=0,
                         message="the connection closed")
        self.assertGreaterEqual(time.monotonic() - started, READ_HEADER_TIMEOUT - 0.5)

    def test_continuation_flood_closes_the_connection(self):
        sock = open_socket(self.proxy.port, self.h2_context())
        self.addCleanup(sock.close)
        flood = b"".join(frame(0x9, 0, 1, b"") for _ in range(100))  # CONTINUATION, no END_HEADERS
        sock.sendall(PREFACE + frame(0x4, 0, 0) + frame(0x1, 0x1, 1, HEADER_BLOCK) + flood)
        harness.wait_for(lambda: closed_by_peer(sock), timeout=2, interval=0.02, message="the connection closed")


IDLE_TIMEOUT = 2
READ_HEADER_TIMEOUT = 4


class SidecarHttp2LimitsTest(Http2LimitsBase, unittest.TestCase):
    attacker = {"user-agent": "attacker"}
    bystander = {"User-Agent": "bystander"}

    @classmethod
    def setUpClass(cls):
        cls.procs = harness.Processes()
        cls.addClassCleanup(cls.procs.stop_all)
        cls.api = clients.start_apiserver(cls.procs, "--enable-control")
        cls.api_url = "http://127.0.0.1:%d" % cls.api.port
        cls.load(cls.api_url)
        cls.proxy = cls.procs.proxy(cls.api_url, "--cache", "pods", "--cache-on-demand=false",
                                    "--http2-max-streams-per-connection", str(STREAMS),
                                    "--idle-timeout", "%ds" % IDLE_TIMEOUT,
                                    "--read-header-timeout", "%ds" % READ_HEADER_TIMEOUT)
        harness.wait_for(lambda: harness.http_get("127.0.0.1", cls.proxy.port, "/readyz")[0] == 200, timeout=30,
                         message="the pods cache to sync")


class GatewayHttp2LimitsTest(Http2LimitsBase, unittest.TestCase):
    """Over TLS with ALPN h2, as client-go reaches a gateway; the attacker and the
    bystander are different users."""
    attacker = {"authorization": "Bearer admin-token"}
    bystander = {"Authorization": "Bearer bob-token"}

    @classmethod
    def setUpClass(cls):
        harness.pki_workdir(cls)
        cls.procs = harness.Processes()
        cls.addClassCleanup(cls.procs.stop_all)
        cls.api = clients.start_apiserver(cls.procs, "--authn", "--enable-control")
        cls.api_url = "http://127.0.0.1:%d" % cls.api.port
        cls.load(cls.api_url, "admin-token")
        cls.proxy = cls.procs.start([
            harness.PROXY_BIN, "--listen", "127.0.0.1:0", "--upstream", cls.api_url, "--token", "proxy-token",
            "--mode", "gateway", "--cache", "pods", "--cache-on-demand=false",
            "--tls-cert-file", cls.pki["server_cert"], "--tls-private-key-file", cls.pki["server_key"],
            "--http2-max-streams-per-connection", str(STREAMS), "--idle-timeout", "%ds" % IDLE_TIMEOUT,
            "--read-header-timeout", "%ds" % READ_HEADER_TIMEOUT])
        cls.context = ssl.create_default_context(cafile=cls.pki["ca"])
        harness.wait_for(lambda: harness.timed_get(cls.proxy.port, "/readyz", {}, cls.context)[0] == 200, timeout=30,
                         message="the gateway ready")


if __name__ == "__main__":
    unittest.main()
