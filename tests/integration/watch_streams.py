"""Raw watch streams for the cached-watch tests: one thread per stream reading JSON lines
through http.client (which undoes the chunked framing), with waits on conditions."""
import http.client
import json
import threading

import harness


class WatchStream:
    def __init__(self, host, port, path, headers=None, timeout=30):
        self.conn = http.client.HTTPConnection(host, port, timeout=timeout)
        self.conn.request("GET", path, headers=headers or {})
        self.response = self.conn.getresponse()
        self.status = self.response.status
        self.headers = {k.lower(): v for k, v in self.response.getheaders()}
        self.raw = []      # lines as bytes
        self.events = []   # parsed
        self.ended = False  # clean end of the chunked body
        self.error = None
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            while True:
                line = self.response.readline()
                if not line:
                    self.ended = True
                    return
                with self.lock:
                    self.raw.append(line)
                    self.events.append(json.loads(line))
        except Exception as e:  # noqa: BLE001 - recorded for the test to inspect
            self.error = e

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def wait(self, predicate, timeout=10, message="watch events"):
        return harness.wait_for(lambda: predicate(self.snapshot()), timeout=timeout, interval=0.01, message=message)

    def wait_end(self, timeout=10):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "stream did not end"

    def close(self):
        try:
            self.conn.sock and self.conn.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()


def types(events):
    return [e["type"] for e in events]
