"""Answer comparison for the differential read test: what "the same answer" means.

Two answers are equal when status code, Content-Type, Retry-After and body bytes are
equal, after masking what legitimately differs between two servers asked at two
instants: the "current: N" of a too-large-RV message (R7; each server names its own
current RV) and the Age cells of a Table (rendered from the clock). When the bytes
differ, `explain` says where, in Kubernetes terms (envelope field, item, Status field).
"""
import gzip
import json
import re

TOO_LARGE = re.compile(rb"(Too large resource version: \d+, current: )\d+")


class Answer:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.gzipped = self.headers.get("content-encoding") == "gzip"
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        self.body = body
        self._json = None

    @property
    def content_type(self):
        return self.headers.get("content-type", "")

    def json(self):
        if self._json is None:
            try:
                self._json = json.loads(self.body)
            except ValueError:
                self._json = False
        return self._json

    def protobuf_list_meta(self):
        """ListMeta fields of a protobuf list answer (N2: "k8s\\0" + runtime.Unknown whose raw
        bytes are the list; ListMeta is field 1 of every list), as {field number: bytes}."""
        if not self.body.startswith(b"k8s\x00"):
            return None
        unknown = protobuf_fields(self.body[4:])
        listmeta = protobuf_fields(protobuf_fields(unknown.get(2, b"")).get(1, b"")) if unknown else None
        return listmeta

    def list_rv(self):
        """metadata.resourceVersion of a list answer (JSON, YAML or protobuf), else None."""
        meta = self.protobuf_list_meta()
        if meta is not None:
            return meta.get(2, b"").decode() or None
        doc = self.json()
        if isinstance(doc, dict):
            return (doc.get("metadata") or {}).get("resourceVersion")
        m = re.search(rb'^metadata:\n(?:  .*\n)*?  resourceVersion: "(\d+)"', self.body, re.M)
        return m.group(1).decode() if m else None

    def continue_token(self):
        meta = self.protobuf_list_meta()
        if meta is not None:
            return meta.get(3, b"").decode() or None
        doc = self.json()
        return (doc.get("metadata") or {}).get("continue") if isinstance(doc, dict) else None

    def status_reason(self):
        """The reason of a Status answer, in JSON or protobuf (Status field 4), else None."""
        doc = self.json()
        if isinstance(doc, dict):
            return doc.get("reason") if doc.get("kind") == "Status" else None
        if not self.body.startswith(b"k8s\x00"):
            return None
        unknown = protobuf_fields(self.body[4:])
        if protobuf_fields(unknown.get(1, b"")).get(2) != b"Status":
            return None
        reason = protobuf_fields(unknown.get(2, b"")).get(4)
        return reason.decode() if isinstance(reason, bytes) else None

    def summary(self):
        doc = self.json()
        if isinstance(doc, dict) and doc.get("kind") == "Status":
            return "%d %s: %s" % (self.status, doc.get("reason"), doc.get("message"))
        if isinstance(doc, dict) and isinstance(doc.get("items"), list):
            meta = doc.get("metadata") or {}
            return "%d %s rv=%s items=%d continue=%s remaining=%s" % (
                self.status, doc.get("kind"), meta.get("resourceVersion"), len(doc["items"]),
                "yes" if meta.get("continue") else "no", meta.get("remainingItemCount"))
        if isinstance(doc, dict):
            meta = doc.get("metadata") or {}
            return "%d %s %s rv=%s" % (self.status, doc.get("kind"), meta.get("name"), meta.get("resourceVersion"))
        return "%d %s %d bytes" % (self.status, self.content_type, len(self.body))


def protobuf_fields(data):
    """The length-delimited and varint fields of one protobuf message: {number: value}
    (the first occurrence of each); {} for bytes that are not a well-formed message."""
    out, i = {}, 0
    try:
        while i < len(data):
            key, i = _varint(data, i)
            number, wire = key >> 3, key & 7
            if wire == 0:
                value, i = _varint(data, i)
            elif wire == 2:
                size, i = _varint(data, i)
                value, i = data[i:i + size], i + size
            elif wire == 1:
                value, i = data[i:i + 8], i + 8
            elif wire == 5:
                value, i = data[i:i + 4], i + 4
            else:
                return {}
            out.setdefault(number, value)
    except IndexError:
        return {}
    return out


def _varint(data, i):
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def _masked_protobuf_status(body):
    """A protobuf Status (N2, E1) whose message names the server's current RV (504, too
    large): its fields with that RV masked. Comparing fields rather than bytes, since the
    RV's digits change the length prefixes around the message. None for other bodies."""
    if not body.startswith(b"k8s\x00"):
        return None
    unknown = protobuf_fields(body[4:])
    status = protobuf_fields(unknown.get(2, b""))
    message = status.get(3)
    if not isinstance(message, bytes) or not TOO_LARGE.search(message):
        return None
    status[3] = TOO_LARGE.sub(rb"\1N", message)
    unknown[2] = repr(sorted(status.items())).encode()
    return b"protobuf Status " + repr(sorted(unknown.items())).encode()


def _masked_body(answer):
    masked = _masked_protobuf_status(answer.body)
    if masked is not None:
        return masked
    body = TOO_LARGE.sub(rb"\1N", answer.body)
    doc = answer.json()
    if isinstance(doc, dict) and doc.get("kind") == "Table":
        age = [i for i, c in enumerate(doc.get("columnDefinitions") or []) if c.get("name") == "Age"]
        for row in doc.get("rows") or []:
            for i in age:
                if i < len(row.get("cells", [])):
                    row["cells"][i] = "<age>"
        body = json.dumps(doc).encode()
    return body


def differences(got, want):
    """Human-readable differences between the proxy's answer and the expected one; [] = equal."""
    out = []
    if got.status != want.status:
        out.append("status %d, want %d" % (got.status, want.status))
    if got.content_type != want.content_type:
        out.append("Content-Type %r, want %r" % (got.content_type, want.content_type))
    if got.gzipped != want.gzipped:
        out.append("Content-Encoding %r, want %r (%d bytes)" % (
            got.headers.get("content-encoding"), want.headers.get("content-encoding"), len(want.body)))
    if got.headers.get("retry-after") != want.headers.get("retry-after"):
        out.append("Retry-After %r, want %r" % (got.headers.get("retry-after"), want.headers.get("retry-after")))
    g, w = _masked_body(got), _masked_body(want)
    if g != w:
        if g.rstrip(b"\n") == w.rstrip(b"\n"):
            # Go's json.Encoder ends every body with exactly one "\n".
            out.append("body differs only in its trailing newline (got %d, want %d)" % (
                len(g) - len(g.rstrip(b"\n")), len(w) - len(w.rstrip(b"\n"))))
        else:
            out.append(explain(got, want))
    return out


def _first_diff(a, b):
    n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    return n, a[max(0, n - 60):n + 60], b[max(0, n - 60):n + 60]


def _key(item):
    m = item.get("metadata") or {}
    return "%s/%s@%s" % (m.get("namespace", ""), m.get("name"), m.get("resourceVersion"))


def explain(got, want):
    g, w = got.json(), want.json()
    if isinstance(g, dict) and isinstance(w, dict) and "message" in g and "message" in w:
        g, w = dict(g), dict(w)
        for d in (g, w):
            d["message"] = TOO_LARGE.sub(rb"\1N", str(d["message"]).encode()).decode()
    if isinstance(g, dict) and isinstance(w, dict):
        if g.get("kind") == "Status" or w.get("kind") == "Status":
            fields = [k for k in sorted(set(g) | set(w)) if g.get(k) != w.get(k)]
            if fields:
                return "Status differs in %s: got %s, want %s" % (
                    fields, {k: g.get(k) for k in fields}, {k: w.get(k) for k in fields})
        elif isinstance(g.get("items"), list) and isinstance(w.get("items"), list):
            parts = []
            for k in ("kind", "apiVersion"):
                if g.get(k) != w.get(k):
                    parts.append("%s %r, want %r" % (k, g.get(k), w.get(k)))
            gm, wm = g.get("metadata") or {}, w.get("metadata") or {}
            if list(gm) != list(wm):
                parts.append("metadata keys %s, want %s" % (list(gm), list(wm)))
            for k in sorted(set(gm) | set(wm)):
                if gm.get(k) != wm.get(k):
                    parts.append("metadata.%s %r, want %r" % (k, gm.get(k), wm.get(k)))
            gi, wi = g["items"], w["items"]
            gk, wk = [_key(i) for i in gi], [_key(i) for i in wi]
            if gk != wk:
                if sorted(gk) == sorted(wk):
                    parts.append("same %d items in a different order" % len(gk))
                else:
                    parts.append("items %d, want %d; extra %s; missing %s" % (
                        len(gk), len(wk), sorted(set(gk) - set(wk))[:4], sorted(set(wk) - set(gk))[:4]))
            else:
                bad = [k for k, a, b in zip(gk, gi, wi) if a != b]
                if bad:
                    parts.append("%d items differ in content, e.g. %s" % (len(bad), bad[:3]))
            if parts:
                return "; ".join(parts)
        elif g != w:
            fields = [k for k in sorted(set(g) | set(w)) if g.get(k) != w.get(k)]
            return "object differs in %s" % fields
    n, a, b = _first_diff(got.body, want.body)
    return "bytes differ at offset %d (%d vs %d bytes): got ...%r... want ...%r..." % (
        n, len(got.body), len(want.body), a, b)


def object_pairs(body):
    """An object as its ordered top-level members without kind/apiVersion (list items of
    built-in types carry neither, L1), for comparing a GET with a list item."""
    doc = json.loads(body, object_pairs_hook=lambda pairs: pairs)
    return [p for p in doc if p[0] not in ("kind", "apiVersion")]
