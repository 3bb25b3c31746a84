"""Smoke tests of how watch events reach a client, over real sockets: WebSocket watches (W2),
gzip'd watch-lists (W9, WatchListCompression) and what a restart does to watches (W5, W6).
The expected bytes were captured from kube-apiserver 1.37.2. Imported by smoke_test.py."""
import base64
import http.client
import json
import os
import socket
import struct
import time
import unittest
import zlib

from smoke_support import Server, ServerTest, make_configmap, wait_for

__all__ = ["WebSocketWatchTest", "WebSocketBearerTokenTest", "GzipWatchListTest", "RestartTest"]

KEY = "dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455's sample key
HANDSHAKE_101 = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
CLOSE_1000 = b"\x88\x02\x03\xe8"


class Conn:
    """A raw client connection that reads what the server sends, with a deadline."""

    def __init__(self, srv, path, headers):
        self.sock = socket.create_connection((srv.host, srv.port), timeout=10)
        lines = ["GET %s HTTP/1.1" % path, "Host: %s:%d" % (srv.host, srv.port)]
        lines += ["%s: %s" % kv for kv in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buf = b""
        self.eof = False

    def fill(self, until, timeout=10):
        """Reads until until(buf) holds or the server closes; returns until(buf)."""
        deadline = time.monotonic() + timeout
        while not until(self.buf) and not self.eof and time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                data = b""
            self.eof = not data
            self.buf += data
        return until(self.buf)

    def head(self):
        self.fill(lambda b: b"\r\n\r\n" in b)
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        return head + b"\r\n\r\n"

    def read_to_eof(self, timeout=10):
        self.fill(lambda b: False, timeout)
        return self.eof

    def close(self):
        self.sock.close()


def websocket_headers(**extra):
    h = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": KEY,
         "Sec-WebSocket-Version": "13", "Origin": "http://localhost"}
    h.update(extra)
    return {k: v for k, v in h.items() if v is not None}


def server_frames(data):
    """Complete unmasked frames at the start of data: [(first byte, payload)], rest."""
    frames, i = [], 0
    while i + 2 <= len(data):
        n, at = data[i + 1] & 0x7F, i + 2
        if n == 126:
            n, at = struct.unpack(">H", data[at:at + 2])[0], at + 2
        elif n == 127:
            n, at = struct.unpack(">Q", data[at:at + 8])[0], at + 8
        if at + n > len(data):
            break
        frames.append((data[i], data[at:at + n]))
        i = at + n
    return frames, data[i:]


def client_frame(opcode, payload):
    key = os.urandom(4)
    assert len(payload) <= 125
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def chunks(data):
    """The complete chunks of a chunked body, and whether the last chunk came."""
    out, i = [], 0
    while True:
        eol = data.find(b"\r\n", i)
        if eol < 0:
            return out, False
        n = int(data[i:eol].split(b";")[0], 16)
        if n == 0:
            return out, True
        if len(data) < eol + 2 + n + 2:
            return out, False
        out.append(data[eol + 2:eol + 2 + n])
        i = eol + 2 + n + 2


def gunzip_member(member):
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = d.decompress(member)
    assert d.eof and d.unused_data == b"", "not exactly one gzip member"
    return data


class WebSocketWatchTest(ServerTest):
    def open_ws(self, path, **extra):
        conn = Conn(self.srv, path, websocket_headers(**extra))
        self.addCleanup(conn.close)
        return conn

    def test_W2_websocket_is_gos_101_then_one_text_message_per_event_then_close_1000_at_the_timeout(self):
        conn = self.open_ws("/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=2")
        self.assertEqual(conn.head(), HANDSHAKE_101)
        self.assertTrue(conn.read_to_eof())
        frames, rest = server_frames(conn.buf)
        self.assertEqual(rest, b"")
        events = [json.loads(p) for op, p in frames[:-1]]
        self.assertTrue(all(op == 0x81 and p.endswith(b"}\n") for op, p in frames[:-1]))
        self.assertEqual([e["type"] for e in events], ["ADDED"] * (len(events) - 1) + ["BOOKMARK"])
        self.assertGreater(len(events), 1)
        self.assertEqual(events[-1]["object"]["metadata"]["annotations"], {"k8s.io/initial-events-end": "true"})
        self.assertEqual(frames[-1], (0x88, b"\x03\xe8"))

    def test_W2_websocket_refused_handshakes_are_gos_bare_answers(self):
        path = "/api/v1/namespaces/default/configmaps?watch=true"
        for extra, answer in [
                ({"Origin": None}, b"HTTP/1.1 403 Forbidden\r\n\r\n"),
                ({"Origin": "null"}, b"HTTP/1.1 403 Forbidden\r\n\r\n"),
                ({"Sec-WebSocket-Version": "8"},
                 b"HTTP/1.1 400 Bad Request\r\nSec-WebSocket-Version: 13\r\n\r\nmissing or bad WebSocket Version"),
                ({"Sec-WebSocket-Key": None}, b"HTTP/1.1 400 Bad Request\r\n\r\nmismatch challenge/response"),
                ({"Sec-WebSocket-Protocol": "a, b"}, b"HTTP/1.1 400 Bad Request\r\n\r\n")]:
            conn = self.open_ws(path, **extra)
            self.assertTrue(conn.read_to_eof(), extra)
            self.assertEqual(conn.buf, answer, extra)

    def test_W2_websocket_ping_is_answered_and_a_close_frame_ends_the_watch_with_close_1000(self):
        conn = self.open_ws("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=60&resourceVersion=0")
        self.assertEqual(conn.head(), HANDSHAKE_101)
        conn.buf = b""
        conn.sock.sendall(client_frame(0x9, b"pingdata"))
        self.assertTrue(conn.fill(lambda b: b"\x8a\x08pingdata" in b))
        conn.sock.sendall(client_frame(0x8, struct.pack(">H", 1001) + b"bye"))
        self.assertTrue(conn.read_to_eof(timeout=5))
        self.assertTrue(conn.buf.endswith(CLOSE_1000))

    def test_W5_websocket_too_old_resource_version_is_one_ERROR_message_then_close_1000(self):
        old = int(self.srv.json("GET", "/api/v1/configmaps", expect=200)[1]["metadata"]["resourceVersion"])
        make_configmap(self.srv, "default", "ws-w5-%d" % old)
        self.srv.json("POST", "/control/compact", expect=200)
        conn = self.open_ws("/api/v1/configmaps?watch=true&resourceVersion=%d" % old)
        self.assertEqual(conn.head(), HANDSHAKE_101)
        self.assertTrue(conn.read_to_eof())
        frames, _ = server_frames(conn.buf)
        self.assertEqual(len(frames), 2)
        ev = json.loads(frames[0][1])
        self.assertEqual((frames[0][0], ev["type"], ev["object"]["code"]), (0x81, "ERROR", 410))
        self.assertEqual(frames[1], (0x88, b"\x03\xe8"))


class WebSocketBearerTokenTest(unittest.TestCase):
    def test_W2_websocket_bearer_token_subprotocol_authenticates_and_is_not_echoed(self):
        srv = Server("--authn")
        self.addCleanup(srv.stop)
        token = "base64url.bearer.authorization.k8s.io." + base64.urlsafe_b64encode(b"admin-token").decode().rstrip("=")
        path = "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1"
        conn = Conn(srv, path, websocket_headers(**{"Sec-WebSocket-Protocol": token + ", v1.example.k8s.io"}))
        self.addCleanup(conn.close)
        self.assertEqual(conn.head(), HANDSHAKE_101[:-2] + b"Sec-WebSocket-Protocol: v1.example.k8s.io\r\n\r\n")
        alone = Conn(srv, path, websocket_headers(**{"Sec-WebSocket-Protocol": token}))
        self.addCleanup(alone.close)
        self.assertTrue(alone.head().startswith(b"HTTP/1.1 401 Unauthorized\r\n"))


class GzipWatchListTest(ServerTest):
    def test_W9_gzip_watch_list_is_one_gzip_member_per_flush_while_the_stream_is_open(self):
        conn = Conn(self.srv, "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true"
                              "&timeoutSeconds=30", {"Accept-Encoding": "gzip"})
        self.addCleanup(conn.close)
        head = conn.head()
        self.assertIn(b"\r\nContent-Encoding: gzip\r\n", head)
        self.assertIn(b"\r\nVary: Accept-Encoding\r\n", head)
        self.assertTrue(conn.fill(lambda b: len(chunks(b)[0]) >= 1))
        first = chunks(conn.buf)[0][0]
        self.assertEqual(first[:10], b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\xff")  # Go's level-1 header
        self.assertEqual(first[-17:-8], b"\x00\x00\xff\xff\x01\x00\x00\xff\xff")  # flushed, then closed
        initial = gunzip_member(first)
        self.assertIn(b'"k8s.io/initial-events-end":"true"', initial.splitlines()[-1])
        make_configmap(self.srv, "default", "gzip-later")
        self.assertTrue(conn.fill(lambda b: len(chunks(b)[0]) >= 2))
        later = json.loads(gunzip_member(chunks(conn.buf)[0][1]))
        self.assertEqual((later["type"], later["object"]["metadata"]["name"]), ("ADDED", "gzip-later"))

    def test_W9_gzip_only_for_watch_lists_and_an_exact_gzip_token(self):
        rv = self.srv.json("GET", "/api/v1/configmaps", expect=200)[1]["metadata"]["resourceVersion"]
        for query, encoding in [("allowWatchBookmarks=true&resourceVersion=" + rv, "gzip"), ("", "gzip"),
                                ("allowWatchBookmarks=true", "gzip;q=1.0"), ("allowWatchBookmarks=true", "*")]:
            conn = Conn(self.srv, "/api/v1/configmaps?watch=true&timeoutSeconds=1&" + query,
                        {"Accept-Encoding": encoding})
            self.addCleanup(conn.close)
            self.assertNotIn(b"Content-Encoding", conn.head(), (query, encoding))


class RestartTest(unittest.TestCase):
    def test_W6_W5_restart_cuts_watches_refuses_then_resuming_from_before_it_is_410(self):
        srv = Server("--sample-data")
        self.addCleanup(srv.stop)
        old = int(srv.json("GET", "/api/v1/configmaps", expect=200)[1]["metadata"]["resourceVersion"])
        make_configmap(srv, "default", "before-restart")
        path = "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d" % old
        http_watch, ws_watch = Conn(srv, path, {}), Conn(srv, path, websocket_headers())
        for c in (http_watch, ws_watch):
            self.addCleanup(c.close)
            c.head()
            self.assertTrue(c.fill(lambda b: b"before-restart" in b))
        last_seen = int(srv.json("GET", "/api/v1/configmaps", expect=200)[1]["metadata"]["resourceVersion"])
        _, answer = srv.json("POST", "/control/restart?seconds=2", expect=200)
        restarted = int(answer["restartResourceVersion"])
        self.assertGreater(restarted, last_seen)  # resuming from the last RV seen is too old as well
        for c in (http_watch, ws_watch):
            self.assertTrue(c.read_to_eof(timeout=5))
        self.assertFalse(chunks(http_watch.buf)[1])  # no last chunk: the stream was cut
        self.assertFalse(server_frames(ws_watch.buf)[0][-1][0] == 0x88)  # no close frame
        probe = Conn(srv, "/readyz", {})
        self.addCleanup(probe.close)
        self.assertTrue(probe.read_to_eof(timeout=5))
        self.assertEqual(probe.buf, b"")  # refused: closed unanswered
        wait_for(lambda: _serving(srv), 10, "the end of the refusal")
        counters = srv.json("GET", "/control/counters", expect=200)[1]
        self.assertEqual(counters["watchWindowResourceVersion"], str(restarted))
        conn = Conn(srv, path, {})
        self.addCleanup(conn.close)
        conn.head()
        self.assertTrue(conn.fill(lambda b: chunks(b)[1]))  # the stream ends after the ERROR
        ev = json.loads(chunks(conn.buf)[0][0])
        self.assertEqual(ev["object"]["message"], "too old resource version: %d (%d)" % (old, restarted))
        status, exact = srv.json("GET", "/api/v1/configmaps?resourceVersionMatch=Exact&resourceVersion=%d" % old)
        self.assertEqual((status, exact["metadata"]["resourceVersion"]), (200, str(old)))
        conn = Conn(srv, "/api/v1/configmaps?watch=true&resourceVersion=0", {})
        self.addCleanup(conn.close)
        conn.head()
        self.assertTrue(conn.fill(lambda b: b'"type":"ADDED"' in b))


def _serving(srv):
    try:
        return srv.request("GET", "/readyz", timeout=2)[0].status == 200
    except (ConnectionError, OSError, http.client.HTTPException):  # closed unanswered while refused
        return False
