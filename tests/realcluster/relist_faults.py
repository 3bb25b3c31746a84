"""Pieces of the relist tests (test_real_relist.py): pod writes through either apiserver of
the control plane, client-go informers whose lines carry their arrival time, and when an
observer first holds a given pod (its time to current after a fault)."""
import http.client
import json
import os
import queue
import statistics
import subprocess
import tempfile
import threading
import time

import realcluster

import clients
import harness


class PodWriter:
    """Creates, patches and deletes pods of one namespace on one apiserver over a kept-alive
    connection; `live` is the names it knows to exist."""

    def __init__(self, plane, namespace, port=None):
        self.plane, self.port = plane, port
        self.path = "/api/v1/namespaces/%s/pods" % namespace
        self.conn = None
        self.live = []

    def _send(self, method, path, body=None, content_type="application/json"):
        for attempt in (1, 2):  # a kept-alive connection the server closed: once more on a new one
            try:
                if self.conn is None:
                    self.conn = self.plane.connection(port=self.port)
                headers = {"Authorization": "Bearer " + realcluster.TOKENS["admin"]}
                data = json.dumps(body).encode() if body is not None else None
                if data is not None:
                    headers["Content-Type"] = content_type
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def create(self, name, churned=True):
        """Creates pod `name`; `churned`: later churn() may patch or delete it."""
        status, body = self._send("POST", self.path, clients.pod(name))
        assert status == 201, (status, body[:300])
        if churned:
            self.live.append(name)
        return int(json.loads(body)["metadata"]["resourceVersion"])

    def churn(self, rnd, count, prefix):
        """`count` writes: about a third each creates, label patches and deletes."""
        for i in range(count):
            op = rnd.random()
            if op < 0.34 or not self.live:
                self.create("%s-%d" % (prefix, i))
            elif op < 0.67:
                status, body = self._send("PATCH", self.path + "/" + rnd.choice(self.live),
                                          {"metadata": {"labels": {"rev": str(i)}}}, "application/merge-patch+json")
                assert status == 200, (status, body[:300])
            else:
                name = rnd.choice(self.live)
                status, body = self._send("DELETE", self.path + "/" + name)
                assert status == 200, (status, body[:300])
                self.live.remove(name)

    def close(self):
        if self.conn is not None:
            self.conn.close()


class TimedInformer(clients.LineClient):
    """The client-go informer of cmd/informer, each line stamped with when it arrived."""

    def __init__(self, kubeconfig, env=None):
        e = dict(os.environ, **(env or {}))
        self.stderr_file = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([realcluster.tool("informer"), "--kubeconfig", kubeconfig, "--kind", "client-go"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr_file, text=True,
                                     env=e)
        self.lines = queue.Queue()
        self.events = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            event["at"] = time.time()
            self.lines.put(event)

    def first_seen(self, key):
        """When the informer first handled an add or update of `key` (None: not yet)."""
        self._drain()
        return next((e["at"] for e in self.events if e.get("key") == key and e.get("event") != "deleted"), None)

    def stderr(self):
        self.stderr_file.seek(0)
        return self.stderr_file.read()

    def stop(self):
        super().stop()
        for f in (self.proc.stdin, self.proc.stdout, self.stderr_file):
            f.close()


class CachePoller:
    """Asks the proxy's memory (resourceVersion=0) for one pod every 20 ms from now on and
    notes when it first answers 200: when the proxy's cache first holds it."""

    def __init__(self, proxy, namespace, name):
        self.path = "/api/v1/namespaces/%s/pods/%s?resourceVersion=0" % (namespace, name)
        self.proxy, self.seen_at = proxy, None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self):
        while not self.done.is_set():
            try:
                status = harness.http_get("127.0.0.1", self.proxy.port, self.path)[0]
            except OSError:
                status = 0
            if status == 200:
                self.seen_at = time.time()
                return
            self.done.wait(0.02)

    def wait(self, timeout=120):
        self.thread.join(timeout)
        self.done.set()
        assert self.seen_at is not None, "the proxy never held " + self.path
        return self.seen_at


def seconds_summary(values):
    return "median %.2f s, max %.2f s" % (statistics.median(values), max(values)) if values else "none"


class TimedStream:
    """One watch stream read on a thread: (seconds since the request, type, RV) per event."""

    def __init__(self, conn, path, headers=None):
        self.started = time.time()
        conn.request("GET", path, headers=dict(headers or {}, Accept="application/json"))
        self.response = conn.getresponse()
        self.conn, self.events, self.ended = conn, [], threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.response:
                event = json.loads(line)
                rv = int(event["object"].get("metadata", {}).get("resourceVersion", 0))
                self.events.append((time.time() - self.started, event["type"], rv))
        except (OSError, http.client.HTTPException, ValueError):
            pass
        finally:
            self.ended.set()
            self.conn.close()

    def bookmarks(self):
        return [(round(t, 1), rv) for t, kind, rv in self.events if kind == "BOOKMARK"]

    def order_violations(self):
        """Events whose RV does not increase, bookmarks that go back."""
        out, last_event, last_any = [], 0, 0
        for t, kind, rv in self.events:
            if (kind == "BOOKMARK" and rv < last_any) or (kind != "BOOKMARK" and rv <= last_event):
                out.append((t, kind, rv))
            if kind != "BOOKMARK":
                last_event = rv
            last_any = max(last_any, rv)
        return out


def paced_writes(writer, per_second, stop):
    """Patches the writer's pods at `per_second` until `stop` is set (the load's shape)."""
    started, n = time.time(), 0
    while not stop.is_set():
        name = writer.live[n % len(writer.live)]
        status, body = writer._send("PATCH", writer.path + "/" + name, {"metadata": {"labels": {"n": str(n)}}},
                                    "application/merge-patch+json")
        assert status == 200, (status, body[:200])
        n += 1
        stop.wait(max(0.0, started + n / per_second - time.time()))
    return n
