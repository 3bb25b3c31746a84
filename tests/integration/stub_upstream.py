#!/usr/bin/python3
"""A stand-in upstream apiserver for pass-through tests (stdlib only).

Endpoints (any method unless noted):
  /big?bytes=N[&chunked=1]  N bytes of a repeating pattern, Content-Length (or chunked), written in 64 KiB pieces
  /stream?lines=N&interval_ms=T  chunked, one JSON line every T ms; each line carries its send time
  /upgrade, .../exec|attach|portforward  with Connection: Upgrade, answers 101 and then echoes raw bytes until EOF
  /slow?ms=T                answers 200 after T ms
  /status/CODE              answers CODE with a few apiserver-style headers and a small JSON body
  anything else             echo: a JSON report of method, path, raw query, headers and body (sha256 + size)

TLS mode (--cert/--key, optional --client-ca to require a client certificate,
optional --token to require "Authorization: Bearer TOKEN"). Prints
"listening on 127.0.0.1:PORT" once ready.
"""
import argparse
import hashlib
import http.server
import json
import socket
import ssl
import sys
import time
import urllib.parse

TOKEN = None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # Head and body go out in separate writes; without this, Nagle plus the
        # client's delayed ACK adds ~40 ms to every answer on a reused connection.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):  # keep test output quiet
        pass

    def _read_body(self):
        """Reads a Content-Length or chunked body; returns (size, sha256 hex, first 4 KiB)."""
        digest = hashlib.sha256()
        size = 0
        head = b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                line = self.rfile.readline()
                n = int(line.split(b";")[0].strip(), 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                remaining = n
                while remaining:
                    data = self.rfile.read(min(remaining, 1 << 16))
                    digest.update(data)
                    if len(head) < 4096:
                        head += data[: 4096 - len(head)]
                    remaining -= len(data)
                    size += len(data)
                self.rfile.readline()
        else:
            remaining = int(self.headers.get("Content-Length", "0"))
            while remaining:
                data = self.rfile.read(min(remaining, 1 << 16))
                if not data:
                    break
                digest.update(data)
                if len(head) < 4096:
                    head += data[: 4096 - len(head)]
                remaining -= len(data)
                size += len(data)
        return size, digest.hexdigest(), head

    def _send(self, code, body, content_type="application/json", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _authorized(self):
        if TOKEN is None:
            return True
        if self.headers.get("Authorization") == "Bearer " + TOKEN:
            return True
        self._read_body()
        self._send(401, b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}\n')
        return False

    def handle_any(self):
        if not self._authorized():
            return
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        if url.path == "/big":
            return self._big(int(query["bytes"][0]), query.get("chunked", ["0"])[0] == "1")
        if url.path == "/stream":
            return self._stream(int(query.get("lines", ["10"])[0]), int(query.get("interval_ms", ["100"])[0]))
        if url.path == "/upgrade" or url.path.endswith(("/exec", "/attach", "/portforward")):
            return self._upgrade()
        if url.path == "/slow":
            self._read_body()
            time.sleep(int(query.get("ms", ["500"])[0]) / 1000.0)  # the answer's latency, not a wait
            return self._send(200, b'{"kind":"Status","status":"Success"}\n')
        if url.path.startswith("/status/"):
            self._read_body()
            code = int(url.path.split("/")[2])
            return self._send(code, b'{"kind":"Status","code":%d}\n' % code,
                              extra=[("Warning", '299 - "deprecated"'), ("Audit-Id", "stub-audit"),
                                     ("Retry-After", "7"), ("Cache-Control", "no-cache, private"),
                                     ("ETag", '"v1"')])
        size, sha, head = self._read_body()
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        report = {
            "method": self.command,
            "path": url.path,
            "raw_query": url.query,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_size": size,
            "body_sha256": sha,
            "body_head": head.decode("latin-1"),
            "client_cert_subject": dict(x[0] for x in peer["subject"]) if peer else None,
        }
        self._send(200, json.dumps(report).encode(), extra=[("Audit-Id", "echo-audit")])

    def _big(self, total, chunked):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(total))
        self.end_headers()
        piece = (b"0123456789abcdef" * 4096)  # 64 KiB
        sent = 0
        while sent < total:
            data = piece[: min(len(piece), total - sent)]
            if chunked:
                self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
            else:
                self.wfile.write(data)
            sent += len(data)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _stream(self, lines, interval_ms):
        self.send_response(200)
        self.send_header("Content-Type", "application/json;stream=watch")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        try:
            for i in range(lines):
                line = json.dumps({"type": "ADDED", "seq": i, "sent": time.time()}).encode() + b"\n"
                self.wfile.write(b"%x\r\n" % len(line) + line + b"\r\n")
                self.wfile.flush()
                time.sleep(interval_ms / 1000.0)  # the stream's pacing, not a wait
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _upgrade(self):
        if "upgrade" not in self.headers.get("Connection", "").lower():
            return self._send(400, b"not an upgrade\n", "text/plain")
        self.send_response(101)
        self.send_header("Connection", "Upgrade")
        self.send_header("Upgrade", self.headers.get("Upgrade", ""))
        self.send_header("X-Stream-Protocol-Version", "v4.channel.k8s.io")
        self.end_headers()
        self.wfile.flush()
        sock = self.connection
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                break
            if not data:
                break
            sock.sendall(data)
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = handle_any


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def main():
    global TOKEN
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--client-ca")
    ap.add_argument("--token")
    args = ap.parse_args()
    TOKEN = args.token
    server = Server(("127.0.0.1", 0), Handler)
    if args.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
        if args.client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(args.client_ca)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print("listening on 127.0.0.1:%d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
