"""A small HTTP/2 client for the tests, on Debian's python3-h2 (the protocol state
machine of the hyper project): one connection, many streams, and flow control in the
test's hands, so that a test can stop reading one stream while it reads another.
"""
import socket
import ssl
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings


class Stream:
    def __init__(self, stream_id):
        self.id = stream_id
        self.status = None
        self.headers = {}
        self.data = bytearray()
        self.ended = False
        self.reset = None  # the error code of a RST_STREAM
        self.received = 0  # DATA payload bytes, acknowledged or not


class H2Client:
    """`acknowledge(stream)` decides whether a stream's DATA opens its window again; the
    connection's window is always opened, so that only the chosen streams stall."""

    def __init__(self, host, port, tls_context=None, window=65535, timeout=10):
        raw = socket.create_connection((host, port), timeout=timeout)
        self.sock = tls_context.wrap_socket(raw, server_hostname=host) if tls_context else raw
        self.alpn = self.sock.selected_alpn_protocol() if tls_context else None
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.local_settings = h2.settings.Settings(client=True, initial_values={
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window,
            h2.settings.SettingCodes.ENABLE_PUSH: 0})
        self.conn.initiate_connection()
        self.conn.increment_flow_control_window(64 << 20)  # the connection never stalls
        self.sock.sendall(self.conn.data_to_send())
        self.streams = {}
        self.goaway = None
        self.closed = False
        self.stalled = set()  # stream ids whose DATA is not acknowledged

    def request(self, method, path, headers=None, body=None, authority="127.0.0.1"):
        """`headers`: a dict, or a list of (name, value) for a name that repeats."""
        stream_id = self.conn.get_next_available_stream_id()
        fields = [(":method", method), (":path", path), (":scheme", "https" if self.alpn else "http"),
                  (":authority", authority)] + list(headers.items() if isinstance(headers, dict) else headers or [])
        self.conn.send_headers(stream_id, fields, end_stream=body is None)
        if body is not None:
            self.conn.send_data(stream_id, body, end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        self.streams[stream_id] = Stream(stream_id)
        return self.streams[stream_id]

    def pump(self, timeout=0.2):
        """Reads what arrives within `timeout`; False once the connection is closed."""
        if self.closed:
            return False
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(1 << 20)
        except (socket.timeout, ssl.SSLWantReadError):
            return True
        except (ConnectionError, OSError):
            self.closed = True
            return False
        if not chunk:
            self.closed = True
            return False
        try:
            events = self.conn.receive_data(chunk)
        except h2.exceptions.ProtocolError:
            # h2 closes its state machine on GOAWAY (the events of this read are lost with
            # the exception), while the server may still end the streams it had accepted:
            # what follows is not read.
            if self.conn.state_machine.state == h2.connection.ConnectionState.CLOSED and self.goaway is None:
                self.goaway = "GOAWAY"
            self.closed = True
            return False
        for event in events:
            self._on(event)
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)
        return True

    def _on(self, event):
        s = self.streams.get(getattr(event, "stream_id", None))
        if isinstance(event, h2.events.ResponseReceived):
            s.headers = dict(event.headers)
            s.status = int(s.headers[":status"])
        elif isinstance(event, h2.events.DataReceived):
            s.data += event.data
            s.received += event.flow_controlled_length
            if s.id in self.stalled:
                # The connection's window only: this stream's stays closed.
                self.conn.increment_flow_control_window(event.flow_controlled_length)
            else:
                self.conn.acknowledge_received_data(event.flow_controlled_length, s.id)
        elif isinstance(event, h2.events.StreamEnded):
            s.ended = True
        elif isinstance(event, h2.events.StreamReset):
            if s:
                s.reset = event.error_code
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = event

    def wait(self, condition, timeout=10, message="condition"):
        deadline = time.time() + timeout
        while not condition():
            if time.time() > deadline:
                raise AssertionError("timed out waiting for " + message)
            if not self.pump() and not condition():
                raise AssertionError("connection closed while waiting for " + message)

    def get(self, path, headers=None, timeout=10):
        s = self.request("GET", path, headers)
        self.wait(lambda: s.ended or s.reset is not None, timeout, "the answer to " + path)
        return s

    def close(self):
        try:
            self.conn.close_connection()
            self.sock.sendall(self.conn.data_to_send())
        except OSError:
            pass
        self.sock.close()
