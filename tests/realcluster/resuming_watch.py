"""A client-go-like reflector over raw HTTP that checks every watch stream it reads (W4, W5,
W6, W7, W11, K1): it lists, watches from the list's RV with bookmarks, re-watches from its
last RV when a stream ends, relists on 410, and on request drops its stream after a random
number of events and resumes from its last RV, as a client does whose connection breaks.

Per stream it checks what client-go relies on: events after the start carry strictly
increasing RVs above the RV the watch started from, bookmarks never go backwards. At the end
its state (key -> RV) must equal the truth: an event missed across a resume stays missing.
"""
import http.client
import json
import random
import threading
import time
import urllib.parse


class Stream:
    """What one watch connection delivered: (type, RV) per event, and its violations."""

    def __init__(self, from_rv):
        self.from_rv = from_rv
        self.events = []
        self.violations = []
        self.end = None  # "closed" (clean end), "dropped" (by us), "410", "error"

    def add(self, kind, rv):
        last_event = max([r for k, r in self.events if k != "BOOKMARK"] or [self.from_rv])
        last_any = max([r for _, r in self.events] or [self.from_rv])
        if kind == "BOOKMARK":
            if rv < last_any:
                self.violations.append("BOOKMARK at %d after %d" % (rv, last_any))
        elif rv <= last_event:
            self.violations.append("%s at %d not after %d" % (kind, rv, last_event))
        self.events.append((kind, rv))


class ResumingWatch:
    """One reflector on its own thread. `connect()` returns a fresh http.client connection
    (plain to the proxy, TLS to the apiserver); `headers` go with every request."""

    def __init__(self, connect, path, headers=None, seed=0, resume_every=(5, 40), timeout_seconds=60):
        self.connect, self.path, self.headers = connect, path, dict(headers or {})
        self.headers.setdefault("Accept", "application/json")
        self.rnd = random.Random(seed)
        self.resume_every = resume_every
        self.timeout_seconds = timeout_seconds
        self.state, self.rv = {}, 0
        self.streams, self.lists, self.expired, self.resumes = [], 0, 0, 0
        self.errors = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.synced = threading.Event()
        self._drop_after = None
        self._conn = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    # --- the test's side ---
    def drop_soon(self, events):
        """Drops the current stream after `events` more events (bookmarks not counted)."""
        with self.lock:
            self._drop_after = events

    def snapshot(self):
        with self.lock:
            return dict(self.state), self.rv

    def violations(self):
        with self.lock:
            return [(i, v) for i, s in enumerate(self.streams) for v in s.violations]

    def stop(self):
        self.stopping.set()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(2)
            except OSError:
                pass
        self.thread.join(10)

    # --- the reflector ---
    def _run(self):
        need_list = True
        while not self.stopping.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                need_list = self._watch()
            except (OSError, http.client.HTTPException, ValueError) as e:
                if self.stopping.is_set():
                    return
                self.errors.append(repr(e))
                time.sleep(0.2)  # the server is away (restart): try again, as client-go backs off

    def _request(self, query):
        conn = self.connect()
        conn.request("GET", self.path + "?" + urllib.parse.urlencode(query), headers=self.headers)
        return conn, conn.getresponse()

    def _list(self):
        # client-go's relist: RV=last (NotOlderThan), or a consistent list the first time.
        conn, r = self._request({"resourceVersion": str(self.rv)} if self.rv else {})
        try:
            body = r.read()
        finally:
            conn.close()
        if r.status != 200:
            raise ValueError("list answered %d: %s" % (r.status, body[:200]))
        doc = json.loads(body)
        with self.lock:
            self.state = {self._key(o): int(o["metadata"]["resourceVersion"]) for o in doc["items"]}
            self.rv = int(doc["metadata"]["resourceVersion"])
            self.lists += 1
        self.synced.set()

    def _watch(self):
        """One stream; True when the next step is a relist."""
        query = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": str(self.rv),
                 "timeoutSeconds": str(self.timeout_seconds)}
        stream = Stream(self.rv)
        with self.lock:
            self.streams.append(stream)
            if self._drop_after is None:
                self._drop_after = self.rnd.randint(*self.resume_every)
        conn, r = self._request(query)
        self._conn = conn
        try:
            if r.status != 200:
                body = r.read()
                raise ValueError("watch answered %d: %s" % (r.status, body[:200]))
            return self._read(r, stream)
        finally:
            self._conn = None
            conn.close()

    def _read(self, r, stream):
        while True:
            line = r.readline()
            if not line:
                stream.end = "closed"
                return False
            event = json.loads(line)
            kind, obj = event["type"], event["object"]
            if kind == "ERROR":
                stream.end = "410" if obj.get("code") == 410 else "error"
                with self.lock:
                    self.expired += obj.get("code") == 410
                return True
            rv = int(obj["metadata"]["resourceVersion"])
            with self.lock:
                stream.add(kind, rv)
                if kind == "DELETED":
                    self.state.pop(self._key(obj), None)
                elif kind != "BOOKMARK":
                    self.state[self._key(obj)] = rv
                self.rv = rv
                if kind != "BOOKMARK":
                    self._drop_after -= 1
                drop = self._drop_after <= 0
                if drop:
                    self._drop_after = None
                    self.resumes += 1
            if drop:
                stream.end = "dropped"
                return False

    @staticmethod
    def _key(obj):
        m = obj["metadata"]
        return "%s/%s" % (m["namespace"], m["name"]) if m.get("namespace") else m["name"]
