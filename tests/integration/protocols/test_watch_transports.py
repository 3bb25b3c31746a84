"""How a watch's events travel, through the proxy and from kube-test-apiserver (which answers
as kube-apiserver 1.37.2 does), asked the same thing: over WebSocket (contract W2: "WebSocket
upgrade is also served, one message per event"), as fabric8's informers and browser UIs
watch, and gzip'd watch-lists (W9, WatchListCompression), as client-go's informers get them
since Go's transport asks for gzip.

The wire helpers (a raw connection, frames) are the test apiserver's smoke tests' own.
"""
import json
import os
import zlib
import sys
import types
import unittest

# The shared helpers (harness, clients) one folder up; the test apiserver's stream helpers.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apiserver"))
import clients  # noqa: E402
import harness  # noqa: E402
from smoke_streams import (HANDSHAKE_101, Conn, chunks, client_frame, server_frames,  # noqa: E402
                           websocket_headers)

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def endpoint(port):
    return types.SimpleNamespace(host="127.0.0.1", port=port)


def events_of(frames):
    """(opcode, type, name) of each message but the close."""
    out = []
    for op, payload in frames:
        if op == 0x88:
            continue
        event = json.loads(payload)
        out.append((op, event["type"], event["object"]["metadata"].get("name")))
    return out


class WatchTransportsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = harness.Processes()
        cls.api = clients.start_apiserver(cls.processes, "--enable-control")
        cls.upstream = "http://127.0.0.1:%d" % cls.api.port
        for name in ("ws-a", "ws-b"):
            clients.request(cls.upstream + CONFIGMAPS, "POST",
                            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}})
        # --gzip-loopback: this loopback client gets the apiserver's compression.
        cls.proxy = cls.processes.proxy(cls.upstream, "--cache", "configmaps", "--cache-on-demand=false",
                                        "--gzip-loopback")
        harness.wait_for(lambda: harness.http_get("127.0.0.1", cls.proxy.port, "/readyz")[0] == 200, timeout=20,
                         message="the proxy's caches synced")

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop_all()

    def open(self, port, path, **extra):
        conn = Conn(endpoint(port), path, websocket_headers(**extra))
        self.addCleanup(conn.close)
        return conn

    def both(self, path, **extra):
        return self.open(self.proxy.port, path, **extra), self.open(self.api.port, path, **extra)

    def test_W2_websocket_watch_list_is_the_apiservers_handshake_messages_and_close(self):
        path = CONFIGMAPS + "?watch=true&allowWatchBookmarks=true&sendInitialEvents=true" \
                            "&resourceVersionMatch=NotOlderThan&timeoutSeconds=2"
        via_proxy, direct = self.both(path)
        self.assertEqual(via_proxy.head(), HANDSHAKE_101)
        self.assertEqual(direct.head(), HANDSHAKE_101)
        self.assertTrue(via_proxy.read_to_eof() and direct.read_to_eof())
        got, rest = server_frames(via_proxy.buf)
        want, _ = server_frames(direct.buf)
        self.assertEqual(rest, b"")
        self.assertEqual(events_of(got), events_of(want))
        self.assertEqual(events_of(got)[-1][:2], (0x81, "BOOKMARK"))
        self.assertTrue(all(payload.endswith(b"}\n") for op, payload in got if op == 0x81))
        self.assertEqual(got[-1], (0x88, b"\x03\xe8"), "the stream ends with close 1000 at timeoutSeconds")
        # The object bytes of each ADDED event are the apiserver's.
        self.assertEqual([p for op, p in got if b'"ADDED"' in p], [p for op, p in want if b'"ADDED"' in p])

    def test_W2_websocket_live_events_arrive_as_messages(self):
        conn = self.open(self.proxy.port, CONFIGMAPS + "?watch=true&resourceVersion=0&timeoutSeconds=30")
        self.assertEqual(conn.head(), HANDSHAKE_101)
        clients.request(self.upstream + CONFIGMAPS, "POST",
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ws-live"}})
        self.assertTrue(conn.fill(lambda b: any(n == "ws-live" for _, _, n in events_of(server_frames(b)[0]))))
        added = [e for e in events_of(server_frames(conn.buf)[0]) if e[2] == "ws-live"]
        self.assertEqual(added, [(0x81, "ADDED", "ws-live")])

    def test_W2_websocket_refused_handshakes_are_the_apiservers_bare_answers(self):
        path = CONFIGMAPS + "?watch=true&resourceVersion=0"
        for extra in ({"Origin": None}, {"Origin": "null"}, {"Sec-WebSocket-Version": "8"},
                      {"Sec-WebSocket-Key": None}, {"Sec-WebSocket-Protocol": "a.k8s.io, b.k8s.io"}):
            with self.subTest(extra=extra):
                via_proxy, direct = self.both(path, **extra)
                self.assertTrue(via_proxy.read_to_eof() and direct.read_to_eof())
                self.assertEqual(via_proxy.buf, direct.buf)

    def test_W2_websocket_bearer_subprotocol_is_taken_out_and_the_other_echoed(self):
        token = "base64url.bearer.authorization.k8s.io.dG9rZW4"  # "token"
        via_proxy, direct = self.both(CONFIGMAPS + "?watch=true&resourceVersion=0&timeoutSeconds=1",
                                      **{"Sec-WebSocket-Protocol": token + ", base64.binary.k8s.io"})
        head = via_proxy.head()
        self.assertEqual(head, direct.head())
        self.assertIn(b"Sec-WebSocket-Protocol: base64.binary.k8s.io\r\n", head)

    def test_W5_websocket_too_old_resource_version_is_one_ERROR_message_then_close(self):
        conn = self.open(self.proxy.port, CONFIGMAPS + "?watch=true&resourceVersion=1")
        self.assertEqual(conn.head(), HANDSHAKE_101)
        self.assertTrue(conn.read_to_eof())
        frames, _ = server_frames(conn.buf)
        self.assertEqual([op for op, _ in frames], [0x81, 0x88])
        self.assertEqual(json.loads(frames[0][1])["object"]["code"], 410)

    def test_W2_a_client_close_frame_ends_the_cached_watch(self):
        conn = self.open(self.proxy.port, CONFIGMAPS + "?watch=true&resourceVersion=0")
        self.assertEqual(conn.head(), HANDSHAKE_101)
        conn.fill(lambda b: len(events_of(server_frames(b)[0])) >= 2)
        conn.sock.sendall(client_frame(0x8, b"\x03\xe8"))
        self.assertTrue(conn.read_to_eof())
        self.assertEqual(server_frames(conn.buf)[0][-1][0], 0x88)
        harness.wait_for(lambda: 'kube_cache_proxy_cached_watchers{resource="configmaps"} 0' in
                         harness.http_get("127.0.0.1", self.proxy.port, "/metrics")[2].decode(),
                         timeout=5, message="the watch released")

    def watch_body(self, port, query, accept_encoding, during=None):
        conn = Conn(endpoint(port), CONFIGMAPS + query + "&timeoutSeconds=%d" % (2 if during else 1),
                    {"Accept-Encoding": accept_encoding})
        self.addCleanup(conn.close)
        head = conn.head()
        if during:
            during()
        self.assertTrue(conn.fill(lambda b: chunks(b)[1]), "the stream ended with its last chunk")
        return head, chunks(conn.buf)[0]

    def gzip_chunk_events(self, chunk_list):
        """The event types of a gzip'd watch body whose every chunk is whole gzip members,
        so that each is readable as it arrives."""
        out = []
        for piece in chunk_list:
            while piece:
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                out += d.decompress(piece).splitlines()
                self.assertTrue(d.eof, "the chunk ends on a member's end")
                piece = d.unused_data
        return [json.loads(line)["type"] for line in out]

    def test_W9_a_gzip_watch_list_chunk_is_whole_gzip_members_as_the_apiserver_sends(self):
        query = "?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        names = iter(range(1000))

        def create_two():
            for _ in range(2):
                clients.request(self.upstream + CONFIGMAPS, "POST", {
                    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gz-%d" % next(names)}})
        # Live events after the initial state: the proxy's are shared by every watcher, each
        # its own member, compressed once.
        head, pieces = self.watch_body(self.proxy.port, query, "gzip, deflate", during=create_two)
        want_head, want_pieces = self.watch_body(self.api.port, query, "gzip, deflate", during=create_two)
        for h in (head, want_head):
            self.assertIn(b"Content-Encoding: gzip\r\n", h)
            self.assertIn(b"Vary: Accept-Encoding\r\n", h)
        got = [t for t in self.gzip_chunk_events(pieces) if t != "BOOKMARK"]
        want = [t for t in self.gzip_chunk_events(want_pieces) if t != "BOOKMARK"]
        self.assertEqual(got[-2:], ["ADDED", "ADDED"])
        # The second watch-list's initial state holds the first one's two configmaps.
        self.assertEqual(len(want), len(got) + 2)

    def test_W9_only_watch_lists_and_an_exact_gzip_token_are_gzipped(self):
        for query, encoding in (("?watch=true&resourceVersion=0", "gzip"),  # no bookmarks: not a watch-list
                                ("?watch=true&allowWatchBookmarks=true", "gzip;q=1")):
            with self.subTest(query=query, encoding=encoding):
                self.assertNotIn(b"Content-Encoding", self.watch_body(self.proxy.port, query, encoding)[0])
                self.assertNotIn(b"Content-Encoding", self.watch_body(self.api.port, query, encoding)[0])


if __name__ == "__main__":
    unittest.main()
