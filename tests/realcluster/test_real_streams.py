"""How watch events reach a client, through the proxy and from kube-apiserver 1.37.2, asked
the same thing in the same run: WebSocket watches (W2: the handshake, one message per event,
text for JSON and binary for protobuf, the close) and gzip'd watch-lists (W9,
WatchListCompression: Content-Encoding gzip exactly for the requests the apiserver
compresses). The proxy is a sidecar in front of the apiserver, caching configmaps in JSON and
protobuf, with --gzip-loopback so that its loopback clients get the apiserver's compression.
"""
import json
import os
import socket
import sys
import unittest
import zlib

import realcluster  # first: it puts tests/integration on the path
import harness  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apiserver"))
from smoke_streams import Conn, chunks, server_frames, websocket_headers  # noqa: E402

NS = "streams"
CONFIGMAPS = "/api/v1/namespaces/%s/configmaps" % NS
PROTOBUF = "application/vnd.kubernetes.protobuf"
WATCH_LIST = "?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"


class RawConn(Conn):
    """smoke_streams.Conn over TLS (the apiserver) or plain TCP (the sidecar)."""

    def __init__(self, port, path, headers, tls=None):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock = tls.wrap_socket(sock, server_hostname="127.0.0.1") if tls else sock
        lines = ["GET %s HTTP/1.1" % path, "Host: 127.0.0.1:%d" % port] + ["%s: %s" % kv for kv in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buf = b""
        self.eof = False


def messages(frames):
    """(opcode, event type, object bytes) of each data message; bookmarks' objects left out
    (their RV is each server's own revision)."""
    out = []
    for op, payload in frames:
        if op == 0x81:
            event = json.loads(payload)
            obj = b"" if event["type"] == "BOOKMARK" else json.dumps(event["object"], sort_keys=True).encode()
            out.append((op, event["type"], obj))
        elif op == 0x82:
            out.append((op, protobuf_type(payload), b"" if protobuf_type(payload) == "BOOKMARK" else payload))
    return out


def protobuf_type(payload):
    """The type of a bare WatchEvent message {1: type (string), 2: RawExtension}."""
    assert payload[0] == 0x0A, payload[:8]
    return payload[2:2 + payload[1]].decode()


def gunzip_members(data):
    """A body of whole gzip members (one per flush), each complete, decompressed."""
    out, rest = b"", data
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += d.decompress(rest)
        assert d.eof, "a gzip member was cut short"
        rest = d.unused_data
    return out


def event_types(body):
    types = [json.loads(line)["type"] for line in body.splitlines()]
    return [t for t in types if t != "BOOKMARK"] + (["end bookmark"] if b"initial-events-end" in body else [])


def status_line(head):
    return head.split(b"\r\n", 1)[0]


@realcluster.require_bin
class StreamsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        realcluster.start_plane(cls, "streams-real-", class_level=True)
        cls.plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": NS}})
        for i in range(3):
            cls.plane.request(CONFIGMAPS, "POST", {"metadata": {"name": "cm-%d" % i}, "data": {"k": "v%d" % i}})
        cls.proxy = realcluster.start_proxy(cls.processes, cls.plane, "--cache", "configmaps",
                                            "--cache-on-demand=false", "--gzip-loopback")

    def direct(self, path, headers):
        h = dict(headers, Authorization="Bearer " + realcluster.TOKENS["admin"])
        conn = RawConn(self.plane.port, path, h, self.plane.ssl)
        self.addCleanup(conn.close)
        return conn

    def via_proxy(self, path, headers):
        conn = RawConn(self.proxy.port, path, headers)
        self.addCleanup(conn.close)
        return conn

    def both_websocket(self, path, **extra):
        headers = websocket_headers(**extra)
        return self.via_proxy(path, headers), self.direct(path, headers)

    def test_W2_websocket_watches_match_the_apiservers_messages_and_close(self):
        cases = [("json watch-list", WATCH_LIST, {}),
                 ("json legacy RV=0", "?watch=true&resourceVersion=0", {}),
                 ("protobuf watch-list", WATCH_LIST, {"Accept": PROTOBUF}),
                 ("protobuf RV=0", "?watch=true&resourceVersion=0", {"Accept": PROTOBUF})]
        for name, query, extra in cases:
            with self.subTest(name):
                # Warm the protobuf cache first (it starts on its first protobuf read).
                harness.wait_for(lambda: self.via_proxy(CONFIGMAPS + query + "&timeoutSeconds=1",
                                                        websocket_headers(**extra)).head().startswith(b"HTTP/1.1 101"),
                                 timeout=30, message="the proxy upgrades")
                via_proxy, direct = self.both_websocket(CONFIGMAPS + query + "&timeoutSeconds=2", **extra)
                head, want_head = via_proxy.head(), direct.head()
                self.assertEqual(status_line(head), status_line(want_head))
                self.assertTrue(via_proxy.read_to_eof(timeout=15) and direct.read_to_eof(timeout=15))
                got, rest = server_frames(via_proxy.buf)
                want, _ = server_frames(direct.buf)
                self.assertEqual(rest, b"")
                self.assertEqual(messages(got), messages(want))
                self.assertEqual(got[-1], want[-1], "the close frame")
                self.assertEqual(got[-1], (0x88, b"\x03\xe8"))

    def test_W2_websocket_handshake_refusals_match_the_apiservers(self):
        path = CONFIGMAPS + "?watch=true&resourceVersion=0"
        for extra in ({"Origin": None}, {"Sec-WebSocket-Version": "8"}, {"Sec-WebSocket-Key": None}):
            with self.subTest(extra=extra):
                via_proxy, direct = self.both_websocket(path, **extra)
                self.assertTrue(via_proxy.read_to_eof() and direct.read_to_eof())
                self.assertEqual(via_proxy.buf, direct.buf)

    def watch_list_answer(self, open_, query, accept_encoding):
        conn = open_(CONFIGMAPS + query + "&timeoutSeconds=2", {"Accept-Encoding": accept_encoding})
        head = conn.head()
        self.assertTrue(conn.fill(lambda b: chunks(b)[1], timeout=15), "the stream ended with its last chunk")
        body_chunks, _ = chunks(conn.buf)
        return head, b"".join(body_chunks)

    def test_W9_gzip_watch_lists_exactly_when_the_apiserver_gzips_them(self):
        rv = self.plane.request(CONFIGMAPS).json()["metadata"]["resourceVersion"]
        cases = [(WATCH_LIST, "gzip", True), (WATCH_LIST, "gzip, deflate", True), (WATCH_LIST, "gzip;q=1", False),
                 ("?watch=true&allowWatchBookmarks=true", "gzip", True),  # defaulted to a watch-list (W4)
                 ("?watch=true&resourceVersion=%s&allowWatchBookmarks=true&sendInitialEvents=false"
                  "&resourceVersionMatch=NotOlderThan" % rv, "gzip", False),
                 (WATCH_LIST.replace("&allowWatchBookmarks=true", ""), "gzip", False)]
        for query, accept_encoding, gzipped in cases:
            with self.subTest(query=query, accept_encoding=accept_encoding):
                head, body = self.watch_list_answer(self.via_proxy, query, accept_encoding)
                want_head, want_body = self.watch_list_answer(self.direct, query, accept_encoding)
                self.assertEqual(b"Content-Encoding: gzip" in want_head, gzipped, want_head)
                self.assertEqual(b"Content-Encoding: gzip" in head, gzipped, head)
                if gzipped:
                    self.assertIn(b"Vary: Accept-Encoding", head)
                    body, want_body = gunzip_members(body), gunzip_members(want_body)
                # Bookmarks come on each server's own schedule (W7); the other events are the same.
                self.assertEqual(event_types(body), event_types(want_body))


if __name__ == "__main__":
    unittest.main()
