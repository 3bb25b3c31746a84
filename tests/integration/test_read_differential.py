"""Differential read test (issue #5 acceptance 1): thousands of generated GET and LIST
requests sent to the proxy and to the test apiserver must get the same answers (status,
reason, message, items, order, envelope; contract R, P, S, N, L, C) while churn runs.

Requests whose answer the server may take at an RV of its choosing (RV unset, "0",
NotOlderThan) are compared with the upstream asked for exactly the RV the proxy reported
(resourceVersion=X&resourceVersionMatch=Exact); RV unset must also be at least as new as
every upstream RV seen before the request (C1), NotOlderThan N at least N. Everything
else (Exact, continue tokens, errors) is compared with the upstream asked the same.

  KCP_DIFF_REQUESTS=20000  more requests (default 3000)
  KCP_DIFF_SEED=N          replay one sequence (printed on every run)
  KCP_DIFF_REPORT=FILE     write every mismatch as JSON lines
  KCP_SERVED_HEADER=NAME   the proxy's served-by header (default X-Kube-Cache-Proxy)
"""
import concurrent.futures
import hashlib
import http.client
import json
import os
import random
import subprocess
import threading
import time
import unittest
import urllib.parse

import clients
import harness
import read_compare
import read_requests
from read_compare import Answer
from read_requests import with_token_rv

CACHED = "pods,configmaps,widgets.example.com"


class Connection:
    """A keep-alive connection that reconnects after errors. `connect` makes a new
    connection (plain HTTP to 127.0.0.1:port by default); `headers` go on every request
    (credentials)."""

    def __init__(self, port, connect=None, headers=None):
        self.port = port
        self.connect = connect or (lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=30))
        self.extra = headers or {}
        self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def get(self, target, headers):
        for attempt in range(3):
            if self.conn is None:
                self.conn = self.connect()
            try:
                self.conn.request("GET", target, headers=dict(headers, **self.extra))
                r = self.conn.getresponse()
                return Answer(r.status, r.getheaders(), r.read())
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise


def served_by(answer):
    """("cache" | "upstream" | None, cache RV or None) from the proxy's served-by header(s)."""
    wanted = os.environ.get("KCP_SERVED_HEADER", "X-Kube-Cache-Proxy").lower()
    how, rv = None, None
    for name, value in answer.headers.items():
        if name == "cache-control" or not (name == wanted or "served" in name or "cache" in name):
            continue
        low = value.lower()
        digits = "".join(c for c in value if c.isdigit())
        if "version" in name or name.endswith("-rv"):
            rv = digits or rv
            continue
        if "cache" in low or "hit" in low:
            how = "cache"
        elif "upstream" in low or "pass" in low or "miss" in low:
            how = "upstream"
        for part in low.replace(",", ";").split(";"):
            k, _, v = part.strip().partition("=")
            if k in ("rv", "resourceversion", "resource-version") and v.strip('"').isdigit():
                rv = v.strip('"')
    return how, rv


def protobuf_first(accept):
    """The client asks for protobuf before any other media type (and accepts another)."""
    ranges = [r.split(";")[0].strip() for r in (accept or "").split(",") if r.strip()]
    return len(ranges) > 1 and ranges[0] == "application/vnd.kubernetes.protobuf"


def json_ranges(accept):
    return ",".join(r for r in accept.split(",") if r.split(";")[0].strip() != "application/vnd.kubernetes.protobuf")


class Budget:
    """Requests left to send, shared by the workers; continue pages count too."""

    def __init__(self, total, compact_at):
        self.total, self.compact_at = total, compact_at
        self.issued = 0
        self.lock = threading.Lock()

    def claim(self):
        with self.lock:
            if self.issued >= self.total:
                return None
            self.issued += 1
            return self.issued

    def add_page(self):
        with self.lock:
            self.issued += 1


class DifferentialRun:
    def __init__(self, seed, proxy_port, upstream_port, universe, upstream=None):
        self.seed = seed
        self.proxy = Connection(proxy_port)
        self.upstream = upstream or Connection(upstream_port)
        self.proxy_port, self.upstream_port = proxy_port, upstream_port
        self.u = universe
        self.memo = {}  # (target, accept) -> sha256 of an upstream 200 answer to a deterministic request
        self.counts = {"requests": 0, "get": 0, "list": 0, "cache": 0, "upstream": 0, "unknown": 0,
                       "exact": 0, "relative": 0, "errors": 0, "unverifiable": 0, "history_kept": 0,
                       "continue_pages": 0, "json_for_protobuf": 0}
        self.mismatches = []
        self.latency = {}  # "verb resource rv=form served_by" -> (requests, seconds)

    def close(self):
        self.proxy.close()
        self.upstream.close()

    # --- bookkeeping ---------------------------------------------------------------------------
    def note_upstream(self, answer):
        rv = answer.list_rv() if answer.status == 200 else None
        if rv and rv.isdigit():
            self.u.saw_rv(rv)

    def note_proxy(self, answer):
        how, _ = served_by(answer)
        self.counts[how or "unknown"] += 1
        token = answer.continue_token() if answer.status in (200, 410) else None
        if token:
            self.u.tokens.append(token)
            del self.u.tokens[:-100]

    def timed(self, req, target):
        """The proxy's answer, its latency booked under verb, RV form and how it was served."""
        t = time.monotonic()
        got = self.proxy.get(target, req.headers())
        seconds = time.monotonic() - t
        self.note_proxy(got)
        rv = req.param("resourceVersion")
        form = "continue" if req.param("continue") else "unset" if rv is None else "0" if rv == "0" else "N"
        key = "%s %s rv=%s %s" % (req.verb, req.resource.plural, form, served_by(got)[0])
        n, total = self.latency.get(key, (0, 0.0))
        self.latency[key] = (n + 1, total + seconds)
        return got

    def fail(self, req, target, got, want, diffs, note=""):
        self.mismatches.append({
            "request": "GET " + target, "accept": req.accept, "verb": req.verb, "mode": req.mode,
            "note": note, "got": got.summary(), "want": want.summary() if want else None, "diffs": diffs,
            "served_by": served_by(got),
            "repro": "curl -s%s -H 'Accept: %s' 'http://PROXY%s'  vs  'http://UPSTREAM%s'" % (
                " --compressed" if req.gzip else "", req.accept or "", target,
                target if not note.startswith("at rv") else note.split(" ", 3)[-1]),
        })

    def upstream_headers(self, req, got):
        """The request's headers for the upstream. The cache answers JSON where a client asks
        for protobuf first with JSON acceptable after it (contract Open choice 8; a real
        kube-apiserver answers the built-in types in protobuf, docs/conformance.md): such
        an answer is compared with the upstream asked for the JSON ranges alone. `got` None:
        before the proxy answered, expect JSON."""
        h = req.headers()
        if protobuf_first(req.accept) and (got is None or got.content_type.startswith("application/json")):
            h["Accept"] = json_ranges(req.accept)
            if got is not None:
                self.counts["json_for_protobuf"] += 1
        return h

    # --- one request ---------------------------------------------------------------------------
    def run(self, req, budget=None):
        self.counts["requests"] += 1
        self.counts[req.verb] += 1
        if req.verb == "get":
            return self.check_get(req)
        answer = self.check_list(req, req.target())
        page = 0
        while answer is not None and page < req.follow and answer.status == 200 and answer.continue_token():
            page += 1
            query = [(k, v) for k, v in req.query if k in ("labelSelector", "fieldSelector", "limit")]
            query.append(("continue", answer.continue_token()))
            nxt = read_requests.ReadRequest("list", req.resource, req.path, query, req.accept, "exact", gzip=req.gzip)
            self.counts["requests"] += 1
            self.counts["continue_pages"] += 1
            if budget:
                budget.add_page()
            answer = self.check_list(nxt, nxt.target())
        return answer

    def check_list(self, req, target):
        self.counts[req.mode] += 1
        rv_before = self.u.max_rv
        got = self.timed(req, target)
        if req.mode == "exact" or got.status != 200:
            want = self.upstream.get(target, self.upstream_headers(req, got))
            self.note_upstream(want)
            if got.status != 200:
                self.counts["errors"] += 1
            diffs = read_compare.differences(got, want)
            key = (target, req.accept)
            if not diffs:
                if want.status == 200:
                    self.memo[key] = hashlib.sha256(got.body).hexdigest()
                return got
            if got.status == 200 and want.status == 410 and want.status_reason() == "Expired":
                # The upstream compacted history the proxy still holds (its window is its
                # own, contract Open choice 2): fine if the proxy's answer is what the
                # upstream said before compacting.
                if self.memo.get(key) == hashlib.sha256(got.body).hexdigest():
                    self.counts["history_kept"] += 1
                    return got
                self.counts["unverifiable"] += 1
                return got
            self.fail(req, target, got, want, diffs)
            return got

        rv = got.list_rv()
        if not rv or not rv.isdigit():
            self.fail(req, target, got, None, ["answer carries no list resourceVersion"])
            return got
        original_rv = req.param("resourceVersion")
        if original_rv in (None, "0") and req.param("continue") and int(rv) < rv_before:
            self.fail(req, target, got, None, ["P7: an rv -1 continuation answered at rv %s, older than rv %d the "
                                               "upstream had already issued before the request" % (rv, rv_before)])
        elif original_rv is None and int(rv) < rv_before:
            self.fail(req, target, got, None, ["C1: consistent LIST answered at rv %s, older than rv %d the upstream "
                                               "had already issued before the request" % (rv, rv_before)])
        elif original_rv not in (None, "0") and original_rv.isdigit() and int(rv) < int(original_rv):
            self.fail(req, target, got, None, ["R3: NotOlderThan %s answered at older rv %s" % (original_rv, rv)])
        token = req.param("continue")
        if token:
            # An rv -1 token (P7) continues at the latest RV: compare with the same token at
            # the RV the proxy answered at.
            # RV=0 stays: with a token it still drops the limit (P5).
            query = [(k, with_token_rv(token, rv) if k == "continue" else v) for k, v in req.query
                     if k not in ("resourceVersion", "resourceVersionMatch") or (k, v) == ("resourceVersion", "0")]
        else:
            query = [(k, v) for k, v in req.query if k not in ("resourceVersion", "resourceVersionMatch")]
            if original_rv == "0" and req.resource.watch_cached:  # P5: the watch cache ignores limit at RV=0
                query = [(k, v) for k, v in query if k != "limit"]
            query += [("resourceVersion", rv), ("resourceVersionMatch", "Exact")]
        expected_target = req.path + "?" + urllib.parse.urlencode(query)
        want = self.upstream.get(expected_target, self.upstream_headers(req, got))
        self.note_upstream(want)
        if want.status == 410:
            self.counts["unverifiable"] += 1
            return got
        if want.status == 504:
            self.fail(req, target, got, want, ["R1: the proxy answered at rv %s, which the upstream never issued" % rv])
            return got
        diffs = read_compare.differences(got, want)
        if diffs:
            self.fail(req, target, got, want, diffs, "at rv %s: %s" % (rv, expected_target))
        return got

    def check_get(self, req):
        self.counts[req.mode] += 1
        target = req.target()
        rv_before = self.u.max_rv
        ns_churn = "/namespaces/churn/" in req.path
        before = self.upstream.get(target, self.upstream_headers(req, None)) if ns_churn else None
        got = self.timed(req, target)
        after = self.upstream.get(target, self.upstream_headers(req, got))
        if got.status != 200:
            self.counts["errors"] += 1
        original_rv = req.param("resourceVersion")
        how, cache_rv = served_by(got)
        fresh = cache_rv is not None and int(cache_rv) >= rv_before
        if original_rv is None and how == "cache" and not fresh:
            self.fail(req, target, got, after, ["C1: consistent GET answered from the cache at rv %s, older than rv "
                                                "%d the upstream had already issued before the request"
                                                % (cache_rv, rv_before)])
            return got
        diffs = read_compare.differences(got, after)
        if not diffs or (before is not None and not read_compare.differences(got, before)):
            return got
        if req.mode == "relative" and got.status in (200, 404) and (original_rv not in (None, "") or fresh):
            # RV "0" / N may be answered from an older state (R2), and a consistent GET the
            # cache answered at a fresh RV may have raced a change: the answer must be the
            # state the upstream had at the proxy's cache RV (or, unnamed, the object's own).
            verdict = self.verify_historical_get(req, got, cache_rv)
            if verdict is None:
                self.counts["unverifiable"] += 1
                return got
            if verdict == "ok":
                return got
            diffs = [verdict] + diffs
        self.fail(req, target, got, after, diffs, "served_by=%s rv=%s" % (how, cache_rv))
        return got

    def verify_historical_get(self, req, got, cache_rv):
        """'ok', a difference, or None when the upstream no longer has the needed history."""
        name = req.path.rsplit("/", 1)[1]
        collection = req.path.rsplit("/", 1)[0]
        if got.body.startswith(b"k8s\x00"):
            return self.verify_historical_protobuf_get(req, got, cache_rv, name, collection)
        doc = got.json()
        if got.status == 200:
            if not isinstance(doc, dict) or doc.get("kind") in ("Table", "PartialObjectMetadata"):
                return None
            at = cache_rv or (doc.get("metadata") or {}).get("resourceVersion")
        else:
            at = cache_rv
        if not at:
            return None
        q = [("fieldSelector", "metadata.name=" + name), ("resourceVersion", at), ("resourceVersionMatch", "Exact")]
        items = self.upstream.get(collection + "?" + urllib.parse.urlencode(q), {"Accept": "application/json"})
        if items.status != 200:
            return None
        found = items.json()["items"]
        if got.status == 404:
            return "ok" if not found else "404 although the object exists at the proxy's rv %s" % at
        if not found:
            return "object absent upstream at rv %s" % at
        want = read_compare.object_pairs(json.dumps(found[0]).encode())
        if read_compare.object_pairs(got.body) != want:
            return "object differs from the upstream's at rv %s" % at
        return "ok"


    def verify_historical_protobuf_get(self, req, got, cache_rv, name, collection):
        """verify_historical_get for a protobuf answer (N2): the object's message must be the
        one item of the upstream's protobuf list of that name at the proxy's cache RV."""
        unknown = read_compare.protobuf_fields(got.body[4:])
        kind = read_compare.protobuf_fields(unknown.get(1, b"")).get(2, b"")
        if got.status != 200 or not cache_rv or kind == b"PartialObjectMetadata":
            return None
        q = [("fieldSelector", "metadata.name=" + name), ("resourceVersion", cache_rv), ("resourceVersionMatch", "Exact")]
        items = self.upstream.get(collection + "?" + urllib.parse.urlencode(q),
                                  {"Accept": "application/vnd.kubernetes.protobuf"})
        if items.status != 200 or not items.body.startswith(b"k8s\x00"):
            return None
        listed = read_compare.protobuf_fields(read_compare.protobuf_fields(items.body[4:]).get(2, b""))
        if 2 not in listed:
            return "object absent upstream at rv %s" % cache_rv
        return "ok" if listed[2] == unknown.get(2) else "object differs from the upstream's at rv %s" % cache_rv


def build_universe(base):
    names, namespaces = {}, set()
    for res in read_requests.RESOURCES:
        status, body = clients.request(base + res.collection())
        assert status == 200, body
        items = json.loads(body)["items"]
        names[res.plural] = [((i["metadata"].get("namespace") or ""), i["metadata"]["name"]) for i in items]
        for ns, _ in names[res.plural]:
            if ns.startswith("load-"):
                namespaces.add(ns)
    nodes = sorted(n for _, n in names["nodes"])
    names["pods"] += [("churn", "churn-%d" % i) for i in range(50)]
    names["configmaps"] += [("churn", "churn-%d" % i) for i in range(50)]
    rv = json.loads(clients.request(base + "/api/v1/namespaces/default/pods?limit=1")[1])["metadata"]["resourceVersion"]
    return read_requests.Universe(sorted(namespaces) + ["default", "demo"], names, nodes, rv)


def proxy_supports(flag):
    out = subprocess.run([harness.PROXY_BIN, "--help"], capture_output=True, text=True).stdout
    return flag in out


def drive(testcase, seed, total, universe, new_run, compact):
    """Sends `total` generated requests from several workers (each its own DifferentialRun
    from `new_run`), compacts the upstream (`compact` returns the compacted RV) at 85 %,
    prints the counts and fails `testcase` on any mismatch."""
    # Several workers, each with its own connections and its own request sequence
    # (seed + worker number): consistent reads and too-large RVs spend most of their
    # time waiting, and concurrent clients are what the proxy serves anyway.
    workers = int(os.environ.get("KCP_DIFF_WORKERS", "4"))
    budget = Budget(total, int(total * 0.85))
    runs = [new_run() for _ in range(workers)]

    def work(w):
        gen = read_requests.Generator(seed * 1000 + w, universe)
        while True:
            n = budget.claim()
            if n is None:
                return
            if n == budget.compact_at:
                compacted = str(compact())
                universe.compacted = True
                universe.recent_rvs[:] = [compacted]
            runs[w].run(gen.next(), budget)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for f in [pool.submit(work, w) for w in range(workers)]:
            f.result()
    elapsed = time.monotonic() - started
    run = runs[0]
    for side in runs[1:]:
        for k, v in side.counts.items():
            run.counts[k] += v
        for k, (n, t) in side.latency.items():
            m, u = run.latency.get(k, (0, 0.0))
            run.latency[k] = (m + n, u + t)
        run.mismatches += side.mismatches
    for r in runs:
        r.close()
    c = run.counts
    if os.environ.get("KCP_DIFF_LATENCY"):
        for k, (n, t) in sorted(run.latency.items()):
            print("  %-45s %5d requests, mean %.1f ms" % (k, n, t / n * 1000))
    cache_share = {}
    for k, (n, _) in run.latency.items():
        verb, plural, form, how = k.split()
        if form == "rv=unset" and verb == "list":
            a, b = cache_share.get(plural, (0, 0))
            cache_share[plural] = (a + (n if how == "cache" else 0), b + n)
    print("consistent LISTs (RV unset) served from the cache: %s" % ", ".join(
        "%s %d/%d" % (p, a, b) for p, (a, b) in sorted(cache_share.items())))
    print("%d requests (%d GET, %d LIST incl. %d continue pages; %d exact, %d at-proxy-rv; %d errors) in %.1f s"
          % (c["requests"], c["get"], c["list"], c["continue_pages"], c["exact"], c["relative"], c["errors"],
             elapsed))
    print("served by the proxy: %d from cache, %d from upstream, %d unmarked; %d not verifiable (history "
          "compacted upstream), %d from history the upstream compacted; %d JSON answers to protobuf-first "
          "requests compared with the upstream's JSON" % (
              c["cache"], c["upstream"], c["unknown"], c["unverifiable"], c["history_kept"], c["json_for_protobuf"]))
    print("mismatches: %d" % len(run.mismatches))
    if os.environ.get("KCP_DIFF_REPORT"):
        with open(os.environ["KCP_DIFF_REPORT"], "w") as f:
            for m in run.mismatches:
                f.write(json.dumps(m) + "\n")
    if run.mismatches:
        lines = ["%s [Accept %s, %s]\n    proxy: %s\n    want:  %s\n    %s" % (
            m["request"], m["accept"], m["note"] or m["mode"], m["got"], m["want"], "\n    ".join(m["diffs"]))
            for m in run.mismatches[:15]]
        testcase.fail("%d of %d answers differ (seed %d; KCP_DIFF_SEED=%d replays):\n%s" % (
            len(run.mismatches), c["requests"], seed, seed, "\n".join(lines)))


class ReadDifferentialTest(unittest.TestCase):
    def setUp(self):
        self.processes = harness.Processes()
        self.addCleanup(self.processes.stop_all)

    def test_proxy_answers_reads_like_the_apiserver_under_churn(self):
        # Sanitizer builds answer several times slower; the release build covers volume.
        self.run_differential("1000" if os.environ.get("KCP_SANITIZED") == "1" else "3000", [])

    def test_a_compressed_store_answers_reads_like_the_apiserver_under_churn(self):
        # --store-encoding compressed (issue #20): the objects churn leaves alone are
        # packed once synced, and inflated by whichever read reaches them; the objects
        # churn changes stay plain while their events are in the history.
        self.run_differential("300" if os.environ.get("KCP_SANITIZED") == "1" else "1000",
                              ["--store-encoding", "compressed"], wait_packed=True)

    def run_differential(self, default_total, extra_args, wait_packed=False):
        total = int(os.environ.get("KCP_DIFF_REQUESTS", default_total))
        seed = int(os.environ.get("KCP_DIFF_SEED", random.randrange(1 << 30)))
        print("differential read test: seed %d (KCP_DIFF_SEED=%d replays it), %d requests" % (seed, seed, total))

        api = clients.start_apiserver(self.processes, "--enable-control", "--sample-data", "--bookmark-interval", "1",
                                      "--history-size", "100000")
        base = "http://127.0.0.1:%d" % api.port
        clients.control(base, "/control/load?resource=pods&count=300&namespaces=6&nodes=5")
        clients.control(base, "/control/load?resource=configmaps&count=120&namespaces=6")
        clients.control(base, "/control/load?resource=widgets.example.com&count=90&namespaces=6")
        universe = build_universe(base)

        args = ["--cache", CACHED] if proxy_supports("--cache") else []
        # Compress as the apiserver does (N1), which loopback clients of a sidecar otherwise
        # do without (--gzip-loopback).
        args += ["--gzip-loopback"] if proxy_supports("--gzip-loopback") else []
        px = self.processes.proxy(base, *(args + extra_args))
        harness.wait_for(lambda: harness.http_get("127.0.0.1", px.port, "/readyz")[0] == 200, timeout=30,
                         interval=0.05, message="proxy ready")
        if args:
            # Served from the cache as soon as the informers synced, if this build serves at all.
            def cached():
                s, h, _ = harness.http_get("127.0.0.1", px.port, "/api/v1/pods?resourceVersion=0")
                return served_by(Answer(s, h.items(), b""))[0] == "cache"
            try:
                harness.wait_for(cached, timeout=5, interval=0.1, message="first answer from the cache")
            except AssertionError:
                print("no answer from the cache within 5 s: this build passes reads through")
        if wait_packed:
            harness.wait_for(lambda: packed_objects(px.port) >= 300 + 120 + 90, timeout=30, interval=0.2,
                             message="every cached object packed")

        clients.control(base, "/control/churn?rate=20&seconds=%d" % max(60, total // 20))

        def compact():
            return clients.control(base, "/control/compact")["resourceVersion"]
        drive(self, seed, total, universe, lambda: DifferentialRun(seed, px.port, api.port, universe), compact)


def packed_objects(port):
    """kube_cache_proxy_cache_packed_objects summed over the cached resources."""
    status, _, body = harness.http_get("127.0.0.1", port, "/metrics")
    assert status == 200
    return sum(float(line.rsplit(" ", 1)[1]) for line in body.decode().splitlines()
               if line.startswith("kube_cache_proxy_cache_packed_objects{"))


if __name__ == "__main__":
    unittest.main()
