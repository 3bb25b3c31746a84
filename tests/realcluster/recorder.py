"""What a client sends on the wire: a TLS server in front of the real apiserver that records
every request head (and the ALPN protocol the client negotiated), then relays each connection
byte for byte. Used by the client-library tests for docs/compatibility.md.
"""
import select
import socket
import ssl
import threading
import urllib.parse

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def lower_keys(headers):
    return {k.lower(): v for k, v in headers.items()}


def query(line):
    """The query parameters of a request line, as a dict."""
    target = line.split(" ")[1]
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(target).query, keep_blank_values=True))


def redact(headers):
    """Headers with the credentials of an Authorization header hidden."""
    return {k: (v.split(" ")[0] + " <token>" if k.lower() == "authorization" else v) for k, v in headers.items()}


class H2HeaderBlocks:
    """Reads one direction of an HTTP/2 connection passively and decodes its header blocks
    (HEADERS and CONTINUATION frames, HPACK); every other frame is skipped."""

    def __init__(self, client_side):
        import hpack  # Debian's python3-hpack (python3-h2 brings it)
        self.decoder = hpack.Decoder()
        # the peer's SETTINGS may let the encoder use a larger table than HPACK's default
        self.decoder.max_allowed_table_size = 1 << 20
        self.buf = b""
        self.preface = len(H2_PREFACE) if client_side else 0
        self.block = None   # (stream, bytes so far) until END_HEADERS
        self.broken = False  # a block HPACK could not decode: nothing more is decoded

    def feed(self, data):
        """The header blocks completed by `data`: [(stream id, {name: value})]."""
        if self.broken:
            return []
        self.buf += data
        if self.preface:
            n = min(self.preface, len(self.buf))
            self.buf, self.preface = self.buf[n:], self.preface - n
        done = []
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < 9 + length:
                break
            kind, flags = self.buf[3], self.buf[4]
            stream = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
            payload, self.buf = self.buf[9:9 + length], self.buf[9 + length:]
            if kind == 0x1:       # HEADERS
                pad = 0
                if flags & 0x8:   # PADDED
                    pad, payload = payload[0], payload[1:]
                if flags & 0x20:  # PRIORITY
                    payload = payload[5:]
                self.block = (stream, payload[:len(payload) - pad])
            elif kind == 0x9 and self.block:  # CONTINUATION
                self.block = (stream, self.block[1] + payload)
            else:
                continue
            if flags & 0x4:       # END_HEADERS
                stream, block = self.block
                self.block = None
                try:
                    done.append((stream, dict(self.decoder.decode(block, raw=False))))
                except Exception as e:  # hpack's errors: decoding stops, relaying goes on
                    self.broken = True
                    done.append((stream, {":error": "undecodable header block: %r" % e}))
                    return done
        return done


class Http1Heads:
    """Reads one direction of an HTTP/1.1 connection passively and parses its message heads:
    every head (`every`), or only the first; bodies of a Content-Length are skipped, and
    nothing is parsed after an upgrade or a chunked body (a watch)."""

    def __init__(self, every):
        self.every, self.buf, self.body, self.done = every, b"", 0, False

    def feed(self, data):
        """The heads completed by `data`: [(first line, {name: value})]."""
        heads = []
        if self.done:
            return heads
        self.buf += data
        while not self.done:
            if self.body:
                n = min(self.body, len(self.buf))
                self.buf, self.body = self.buf[n:], self.body - n
                if self.body:
                    break
            if b"\r\n\r\n" not in self.buf:
                break
            head, self.buf = self.buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            headers = dict((k.strip(), v.strip()) for k, v in (h.split(":", 1) for h in lines[1:] if h))
            heads.append((lines[0], headers))
            h = lower_keys(headers)
            self.body = int(h.get("content-length", "0"))
            self.done = not self.every or "upgrade" in h or "chunked" in h.get("transfer-encoding", "")
        return heads


class Recorder:
    """A TLS server on 127.0.0.1 in front of the apiserver: it records every request head its
    clients send (and the ALPN protocol they negotiated: it offers h2 and http/1.1, and
    negotiates the same with the apiserver), then relays each connection to the apiserver byte
    for byte. Over HTTP/2 the heads are read from the relayed frames. Tokens are not recorded.

    `requests`: {"alpn", "line", "headers": {name: value}}, in order; an HTTP/2 request's line is
    "METHOD :path HTTP/2" and its headers keep the other pseudo-headers (":authority", ...).
    `responses`: the first response head of each HTTP/1.1 connection, every response head of
    an HTTP/2 one: {"line", "headers"}."""

    def __init__(self, plane, pki):
        self.plane = plane
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(pki["server_cert"], pki["server_key"])
        self.ctx.set_alpn_protocols(["h2", "http/1.1"])
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.requests = []     # {"alpn", "line", "headers": {name: value}}
        self.responses = []    # {"line", "headers"}
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.listener.close()

    def _accept(self):
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _upstream_context(self, alpn):
        if not alpn:
            return self.plane.ssl
        ctx = ssl.create_default_context(cafile=self.plane.ca)
        ctx.set_alpn_protocols([alpn])
        return ctx

    def _serve(self, raw):
        try:
            down = self.ctx.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        alpn = down.selected_alpn_protocol()
        try:
            up = self._upstream_context(alpn).wrap_socket(
                socket.create_connection(("127.0.0.1", self.plane.port)), server_hostname="127.0.0.1")
        except (OSError, ssl.SSLError):
            down.close()
            return
        # One thread per connection reads both sides (an SSL socket must not be used by two
        # threads at once), without blocking; it waits in select() only when neither side had
        # anything: a record that arrived with the handshake is in OpenSSL's buffer, not the socket's.
        readers = {down: (up, self.requests, H2HeaderBlocks(client_side=True) if alpn == "h2" else Http1Heads(True)),
                   up: (down, self.responses, H2HeaderBlocks(client_side=False) if alpn == "h2" else Http1Heads(False))}
        try:
            for s in readers:
                s.setblocking(False)
            while True:
                moved = False
                for s, (other, into, heads) in readers.items():
                    try:
                        data = s.recv(65536)
                    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                        continue
                    if not data:
                        return
                    other.setblocking(True)
                    other.sendall(data)
                    other.setblocking(False)
                    self._record(into, heads.feed(data), alpn)
                    moved = True
                if not moved:
                    select.select(list(readers), [], [])
        except (OSError, ssl.SSLError, ValueError):
            pass
        finally:
            for s in (up, down):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def _record(self, into, heads, alpn):
        """Appends the heads a side's reader completed: HTTP/1.1 (line, headers), or HTTP/2
        (stream, headers) of which only requests and responses count, not trailers."""
        for first, h in heads:
            if alpn != "h2":
                entry = {"line": first, "headers": redact(h)}
            elif ":status" in h:
                entry = {"line": "HTTP/2 %s" % h.pop(":status"), "headers": h}
            elif ":method" in h or ":error" in h:
                entry = {"line": "%s %s HTTP/2" % (h.pop(":method", "?"), h.pop(":path", "")), "headers": redact(h)}
            else:
                continue
            if into is self.requests:
                entry = dict(alpn=alpn, **entry)
            with self.lock:
                into.append(entry)
