"""Malformed query parameters on GET, LIST, WATCH and watch-list (issue 16, "Bad input"):
the request table, and a summary of a server's answer that two servers' answers are
compared by.

Contract clauses the table exercises:
- E4: booleans are false only for "0" and "false" in any case (not Go's ParseBool);
  integers are strconv.ParseInt of the raw value ("" and " 5" are 400, "+5" is 5); a
  duplicated parameter takes its first value (url.Values.Get), for selectors and
  resourceVersionMatch too; GET reads only resourceVersion.
- R4: resourceVersionMatch validation (422) after decoding (400).
- R6: a malformed resourceVersion is 400 on LIST, a bare 500 on GET and WATCH.
- W1: a named GET stays a GET whatever ?watch says.
- W8: timeoutSeconds becomes time.Duration(T) * time.Second, int64 nanoseconds that wrap:
  T < 0, or a T that wraps negative (9223372036854775807 is -1 s), has expired before the
  stream starts; a T that wraps to 0 (2^55, -2^63) counts as "no timeout".

The answers of kube-apiserver 1.37 are recorded in bad_params_real.json
(tests/realcluster/test_real_bad_params.py checks them against the real apiserver and
rewrites them with KCP_BAD_PARAMS_RECORD=1); tests/integration/test_bad_params.py holds
the test apiserver to them. Both tiers also compare the proxy with the server behind it.

Each server holds namespace NAMESPACE with exactly one object of each resource, named
OBJECT, so an accepted watch from "now" starts with one ADDED event for it.
"""
import concurrent.futures
import http.client
import json
import os
import re
import socket
import threading
import urllib.parse

NAMESPACE = "bad-params"
OBJECT = "only"

# Cached by the proxy under test (pods, configmaps) and passed through (secrets): the
# proxy runs with PROXY_ARGS, without on-demand caching, which would cache secrets too.
RESOURCES = ["pods", "configmaps", "secrets"]
PROXY_ARGS = ["--cache", "pods,configmaps", "--cache-on-demand=false"]

# The bodies that put OBJECT in NAMESPACE.
OBJECTS = {
    "pods": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": OBJECT},
             "spec": {"containers": [{"name": "main", "image": "registry.example.com/app:1"}]}},
    "configmaps": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": OBJECT}, "data": {"k": "v"}},
    "secrets": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": OBJECT}, "data": {"k": "dg=="}},
}

RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bad_params_real.json")

# Request forms: the query each one starts with.
WATCH_LIST = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
# "watchpath" is the deprecated /watch/ prefix, a watch whatever ?watch says (W1).
FORMS = {"get": "", "list": "", "watch": "watch=1", "watchlist": WATCH_LIST, "watchpath": ""}

# Go's strconv.ParseBool would read these as it likes; the parameter codec does not use it.
BOOL_VALUES = ["maybe", "", "TRUE", "1", "0", "t", "f", "F", "FALSE", "False", "fAlSe", "no", "off"]
# As sent on the wire: "+5" is " 5" once decoded, "%2B5" is "+5".
BAD_INTS = ["-1", "0", "abc", "1.5", "99999999999999999999", "9223372036854775807", "-9223372036854775808",
            "+5", "%2B5", "0x10", ""]
# Timeouts around Go's Duration overflow: 2^55 s wraps to 0, 9223372037 s wraps negative,
# 9223372036 s (292 years) is the largest that does not.
WRAPPING_TIMEOUTS = ["36028797018963968", "9223372037", "9223372036"]

# Queries added to every form (a form's own parameters come first, so duplicates of them
# show which value wins).
COMMON = (
    ["allowWatchBookmarks=maybe", "allowWatchBookmarks=",
     "sendInitialEvents=maybe", "sendInitialEvents=false", "sendInitialEvents="] +
    ["limit=" + v for v in BAD_INTS] +
    ["timeoutSeconds=" + v for v in BAD_INTS + WRAPPING_TIMEOUTS] +
    ["limit=1&limit=2", "limit=abc&limit=1", "limit=1&limit=abc",
     "timeoutSeconds=5&timeoutSeconds=abc", "timeoutSeconds=abc&timeoutSeconds=5",
     "timeoutSeconds=-1&timeoutSeconds=5",
     "resourceVersion=1&resourceVersion=2", "resourceVersion=abc&resourceVersion=1",
     "resourceVersion=0&resourceVersion=abc",
     "labelSelector=a%3Db&labelSelector=c%3Dd", "labelSelector=a+b&labelSelector=c",
     "labelSelector=c&labelSelector=a+b",
     "fieldSelector=metadata.name%3D" + OBJECT + "&fieldSelector=metadata.name%3Dother",
     "fieldSelector=abc&fieldSelector=metadata.name%3D" + OBJECT,
     "fieldSelector=metadata.name%3D" + OBJECT + "&fieldSelector=abc",
     "resourceVersionMatch=NotOlderThan&resourceVersionMatch=bogus",
     "resourceVersion=abc", "resourceVersion=abc&resourceVersionMatch=NotOlderThan",
     "resourceVersionMatch=bogus", "resourceVersionMatch=bogus&resourceVersion=0",
     "resourceVersionMatch=NotOlderThan", "resourceVersionMatch=Exact", "resourceVersionMatch=",
     # Which error wins: decoding order (E4, S2) before validation (R4).
     "limit=abc&timeoutSeconds=abc", "timeoutSeconds=abc&labelSelector=a+b", "labelSelector=a+b&limit=abc",
     "limit=abc&resourceVersionMatch=bogus", "timeoutSeconds=-1&resourceVersion=abc",
     "timeoutSeconds=-1&resourceVersionMatch=bogus",
     # Selectors echoed into the message with bytes JSON must escape as Go does (E1):
     # invalid UTF-8 as \ufffd, U+2028 and U+2029 as \u2028 and \u2029, <>& as \u003c...
     "fieldSelector=%FF%E2%80%A8%E2%80%A9%3C%26", "labelSelector=%FF%E2%80%A8%3C"])
# The watch parameter itself: on a collection it decides between LIST and WATCH.
WATCH_BOOLS = ["watch=" + v for v in BOOL_VALUES] + ["watch", "watch=true&watch=false", "watch=false&watch=true",
                                                     "watch=maybe&resourceVersion=abc", "watch=0&timeoutSeconds=-1"]

# On a plain watch, booleans whose value shows in the first event: a watch matching
# nothing starts with the initial-events-end bookmark only when bookmarks are on (W4
# defaulting, W9); a watch-list without RV sends the ADDED events only when
# sendInitialEvents is true, else starts at "now" with none.
WATCH_ONLY = (["labelSelector=app%3Dnone&allowWatchBookmarks=" + v for v in BOOL_VALUES] +
              ["resourceVersionMatch=NotOlderThan&sendInitialEvents=" + v for v in BOOL_VALUES])

# A plain watch from RV 1 replays history the proxy, started later, does not hold: the
# apiserver streams events, the proxy answers 410 "too old" (W5). Both are right.
HISTORY_DEPENDENT = {("watch", "resourceVersion=1&resourceVersion=2"), ("watchpath", "resourceVersion=1&resourceVersion=2")}


def cases():
    """(form, resource, query) for every request of the table."""
    out = []
    for resource in RESOURCES:
        for form, base in FORMS.items():
            extra = WATCH_BOOLS if form in ("get", "list", "watchpath") else WATCH_ONLY if form == "watch" else []
            for q in COMMON + extra:
                if (form, q) not in HISTORY_DEPENDENT:
                    out.append((form, resource, "&".join(p for p in (base, q) if p)))
    return out


def path(form, resource, query):
    base = "/api/v1/%snamespaces/%s/%s" % ("watch/" if form == "watchpath" else "", NAMESPACE, resource)
    if form == "get":
        base += "/" + OBJECT
    return base + ("?" + query if query else "")


def key(form, resource, query):
    return "%s %s" % (form, path(form, resource, query))


# W8: kube-apiserver's serveWatch selects at random between its expired context and the
# first event of a watch whose deadline has passed, so the stream ends with no event,
# after an ERROR "context deadline exceeded" (a consistent start that could not read the
# current revision), or after some initial events (a legacy start from the cache). All
# read as this one summary; the proxy and the test apiserver always end with no event.
ENDED_AT_ONCE = "200 watch ended at once (W8: deadline already passed)"


def deadline_passed(target):
    """Whether handleWatch's time.Duration(timeoutSeconds) * time.Second is negative:
    the first timeoutSeconds value, as strconv.ParseInt reads it, times 1e9 in int64."""
    query = target.split("?", 1)[1] if "?" in target else ""
    values = [urllib.parse.unquote_plus(v) for k, _, v in (p.partition("=") for p in query.split("&"))
              if k == "timeoutSeconds"]
    if not values or not re.fullmatch(r"[+-]?[0-9]+", values[0]):
        return False
    seconds = int(values[0])
    if not -(1 << 63) <= seconds < (1 << 63):
        return False
    nanos = (seconds * 1000000000) & ((1 << 64) - 1)
    return nanos >= (1 << 63)  # negative as an int64


def canonical(target, summary):
    if deadline_passed(target) and summary.startswith("200 watch ") and \
            (summary == "200 watch ended with no event" or summary.endswith(", then ended")):
        return ENDED_AT_ONCE
    return summary


def _status_body(body):
    """A Status body as sent (it must be byte-equal), else a marker."""
    text = body.decode(errors="replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        return "not JSON: " + text[:200]
    return text if doc.get("kind") == "Status" else "kind %s" % doc.get("kind")


def _list_shape(doc):
    """What a 200 LIST answer says about the options: how many items, whether paged."""
    return "%s items=%d continue=%s" % (doc.get("kind"), len(doc.get("items") or []),
                                        bool(doc.get("metadata", {}).get("continue")))


def _event_shape(line):
    """An ERROR event byte for byte; otherwise its type and what it is about."""
    event = json.loads(line)
    if event.get("type") == "ERROR":
        return line.decode().strip()
    obj = event.get("object") or {}
    meta = obj.get("metadata") or {}
    if event.get("type") == "BOOKMARK":
        return "BOOKMARK %s %s" % (obj.get("kind"), sorted((meta.get("annotations") or {}).items()))
    return "%s %s %s" % (event.get("type"), obj.get("kind"), meta.get("name"))


def summarize(connect, target, headers=None, first_within=2.0, end_within=0.5):
    """The comparable summary of one GET; `connect()` opens an http.client connection.

    A watch stream is read up to its first event (waiting `first_within`); then, for a
    watch with timeoutSeconds or an ERROR event, whether it ends within `end_within`."""
    conn = connect()
    try:
        conn.request("GET", target, headers=dict(headers or {}))
        r = conn.getresponse()
        if r.status != 200:
            return "%d %s" % (r.status, _status_body(r.read()))
        ctype = r.getheader("Content-Type", "")
        if r.getheader("Transfer-Encoding", "") != "chunked" or not ctype.startswith("application/json") or \
                "watch" not in target:
            doc = json.loads(r.read())
            if doc.get("kind", "").endswith("List"):
                return "200 " + _list_shape(doc)
            return "200 %s %s" % (doc.get("kind"), doc.get("metadata", {}).get("name"))
        return "200 watch " + _watch_shape(conn, r, target, first_within, end_within)
    finally:
        conn.close()


def _watch_shape(conn, r, target, first_within, end_within):
    """A reader thread drains the stream (http.client cannot resume a read that timed
    out); shutting the socket down ends it."""
    lines, ended, got_line = [], threading.Event(), threading.Event()

    def drain():
        try:
            while True:
                line = r.readline()
                if not line:
                    ended.set()
                    return
                lines.append(line)
                got_line.set()
        except (OSError, ValueError, http.client.HTTPException):
            pass  # the socket was shut down under the reader
        finally:
            got_line.set()
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        got_line.wait(first_within)
        if not lines:
            return "ended with no event" if ended.is_set() else "no event within %gs" % first_within
        shape = _event_shape(lines[0])
        if not shape.startswith("{") and "timeoutSeconds" not in target:
            return shape
        reader.join(end_within)
        return shape + (", then ended" if ended.is_set() else ", open")
    finally:
        try:
            conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        reader.join()


def summarize_all(connect, headers=None, workers=12):
    """key -> canonical summary for every case, `workers` requests at a time (watches that
    stay open cost their waits; in parallel the table takes seconds)."""
    table = cases()

    def one(case):
        target = path(*case)
        return key(*case), canonical(target, summarize(connect, target, headers))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return dict(pool.map(one, table))


def load_record():
    with open(RECORD) as f:
        return json.load(f)


def save_record(answers):
    with open(RECORD, "w") as f:
        f.write("{\n" + ",\n".join("  %s: %s" % (json.dumps(k), json.dumps(v))
                                   for k, v in sorted(answers.items())) + "\n}\n")


def mismatches(expected, actual, expected_name, actual_name):
    """Readable lines for every case where the two differ."""
    out = []
    for k in sorted(set(expected) | set(actual)):
        if expected.get(k) != actual.get(k):
            out.append("%s\n  %s: %s\n  %s: %s" % (k, expected_name, expected.get(k), actual_name, actual.get(k)))
    return out


def proxy_answers(port):
    """Every table request's answer from a proxy on 127.0.0.1:port."""
    return summarize_all(lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=30))


def assert_same_answers(case, want, got, want_name, got_name, hint=""):
    """Fails `case` listing every request whose answers differ."""
    problems = mismatches(want, got, want_name, got_name)
    case.assertEqual(problems, [], "%d answers differ%s:\n%s" % (len(problems), hint, "\n".join(problems)))
