"""Seeded generator of GET and LIST requests for the differential read test.

Each request is a `ReadRequest`: a path, an ordered query, request headers, and how its
answer may be compared with the upstream's:

- "exact": the answer is fixed by the request (Exact RV, continue token, validation
  errors), so the proxy and the upstream are asked the same thing and must agree.
- "relative": the answer may be taken at an RV of the server's choosing (RV unset, "0",
  NotOlderThan N; contract R2/R3, C1, P5). The proxy's answer is compared with the
  upstream asked for exactly the RV the proxy reported.

The same seed and the same `Universe` give the same request sequence.
"""
import base64
import json
import os
import random
import re
import urllib.parse

JSON = "application/json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
POM_LIST = ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
POM = ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
       "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")

# Accept headers with their weight: what client-go, kubectl, client-node and python send,
# then negotiation corner cases (N1, N4).
LIST_ACCEPTS = [
    (None, 10), (JSON, 30), ("application/json, */*", 8), ("*/*", 4),
    ("application/vnd.kubernetes.protobuf, application/json", 8), (POM_LIST, 6),
    ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 3),
    ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", 2),  # 406: not a list
    (TABLE, 3), ("application/vnd.kubernetes.protobuf", 2), ("text/html", 2), ("application/yaml", 1),
]
GET_ACCEPTS = [
    (None, 10), (JSON, 30), ("application/json, */*", 6), ("application/vnd.kubernetes.protobuf, application/json", 6),
    (POM, 6), ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 2),  # 406: not a list
    (TABLE, 2), ("application/vnd.kubernetes.protobuf", 2), ("text/html", 2),
]
# KCP_DIFF_ENCODING=protobuf: only what Kubernetes' own components send (issue 18): protobuf,
# protobuf with the JSON fallback (client-go's typed clients), and PartialObjectMetadata in
# protobuf (metadata informers). Custom resources have no protobuf form: the apiserver answers
# their protobuf-only requests 406 and the rest in JSON, and so must the proxy.
PROTOBUF = "application/vnd.kubernetes.protobuf"
if os.environ.get("KCP_DIFF_ENCODING") == "protobuf":
    LIST_ACCEPTS = [(PROTOBUF, 10), (PROTOBUF + ", application/json", 10), (POM_LIST, 8)]
    GET_ACCEPTS = [(PROTOBUF, 10), (PROTOBUF + ", application/json", 10), (POM, 8)]


class Resource:
    def __init__(self, group, version, plural, namespaced, weight, cached, label_keys, fields, bad_fields,
                 label_values=None, watch_cached=True):
        self.group, self.version, self.plural = group, version, plural
        self.namespaced, self.weight, self.cached = namespaced, weight, cached
        self.label_keys, self.fields, self.bad_fields = label_keys, fields, bad_fields
        # label key -> value generator (rng) for keys only this type carries; the shared
        # keys draw from Generator._label_value.
        self.label_values = label_values or {}
        # False for a type kube-apiserver keeps no watch cache of (events): its LISTs are
        # etcd's, where a limit applies at RV=0 too (P5).
        self.watch_cached = watch_cached

    @property
    def prefix(self):
        return "/api/v1" if not self.group else "/apis/%s/%s" % (self.group, self.version)

    @property
    def qualified(self):
        return self.plural + ("." + self.group if self.group else "")

    def collection(self, namespace=""):
        if namespace and self.namespaced:
            return "%s/namespaces/%s/%s" % (self.prefix, namespace, self.plural)
        return "%s/%s" % (self.prefix, self.plural)


# Field selectors per type: accepted fields with value generators, and rejected ones (S4-S6).
POD_FIELDS = {
    "metadata.name": None, "metadata.namespace": None,
    "spec.nodeName": lambda r, u: r.choice(u.nodes + [""]),
    "spec.host": lambda r, u: r.choice(u.nodes),
    "status.phase": lambda r, u: r.choice(["Running", "Pending", "Succeeded"]),
    "spec.restartPolicy": lambda r, u: r.choice(["Always", "Never"]),
    "spec.schedulerName": lambda r, u: "default-scheduler",
    "spec.serviceAccountName": lambda r, u: r.choice(["default", "builder"]),
    "spec.hostNetwork": lambda r, u: r.choice(["true", "false"]),
    "status.podIP": lambda r, u: "10.0.0.%d" % r.randint(1, 40),
    "status.nominatedNodeName": lambda r, u: "",
}
RESOURCES = [
    Resource("", "v1", "pods", True, 45, True, ["app", "tier", "team", "version", "pod-template-hash", "missing"],
             POD_FIELDS, ["spec.containers", "metadata.uid", "status.hostIP"]),
    Resource("", "v1", "configmaps", True, 20, True, ["app", "missing"],
             {"metadata.name": None, "metadata.namespace": None}, ["spec.nodeName", "data.mode"]),
    Resource("example.com", "v1", "widgets", True, 18, True, ["app", "missing"],
             {"metadata.name": None, "metadata.namespace": None,
              "spec.color": lambda r, u: r.choice(["red", "blue", "green", ""])}, ["spec.size", "status.phase"]),
    Resource("", "v1", "namespaces", False, 4, False, ["kubernetes.io/metadata.name"],
             {"metadata.name": None, "status.phase": lambda r, u: r.choice(["Active", "Terminating"])},
             ["metadata.namespace", "spec.finalizers"]),
    Resource("", "v1", "nodes", False, 3, False, ["kubernetes.io/os"],
             {"metadata.name": None, "spec.unschedulable": lambda r, u: r.choice(["true", "false"])},
             ["metadata.namespace", "status.phase"]),
    Resource("apps", "v1", "deployments", True, 3, False, ["app"],
             {"metadata.name": None, "metadata.namespace": None}, ["status.replicas", "spec.paused"]),
]

# Label selector inputs the parser must reject, with the apiserver's texts (S2).
BAD_LABEL_SELECTORS = ["a b", "=x", "a=b,", "a in (b", "a>x", "-k=v", "a=b$", "a in b", "!", "a!", "a==", "x=(",
                       "k=" + "v" * 64, "p" * 254 + "/k=v", "a notin", "app in (a,b) c"]
BAD_FIELD_SELECTORS = ["abc", "metadata.name", "a=b,c", "=x"]
BAD_RVS = ["abc", "-1", "1.5", " 12", "0x10", "+5", "18446744073709551616"]
BAD_LIMITS = ["abc", "1.5", "-1", "0", "", "99999999999999999999"]


def reads_single_key(res, ns, query):
    """The registry reads one key, non-recursively, when the field selector names one
    object (SelectionPredicate.MatchesSingle) and the key can be built; a legacy RV=N with
    a limit is then NotOlderThan (storage.ValidateListOptions), not Exact."""
    fs = next((v for k, v in query if k == "fieldSelector"), None)
    if fs is None or any(k == "continue" for k, _ in query):
        return False
    terms = {}
    for term in fs.split(","):
        for op in ("!=", "==", "="):
            if op in term:
                field, value = term.split(op, 1)
                if op != "!=":
                    terms.setdefault(field.strip(), value.strip())
                break
    name = terms.get("metadata.name")
    if not name or name in (".", "..") or "/" in name or "%" in name:
        return False
    if not res.namespaced or ns:
        return True
    other = terms.get("metadata.namespace", "")
    return bool(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", other)) and len(other) <= 63


class ReadRequest:
    def __init__(self, verb, resource, path, query, accept, mode, follow=0, gzip=False):
        self.verb, self.resource, self.path = verb, resource, path
        self.gzip = gzip  # Accept-Encoding: gzip, as kubectl sends (N1: gzip from 128 KiB)
        self.query = query  # list of (key, value), in order
        self.accept = accept
        self.mode = mode  # "exact" or "relative"
        self.follow = follow  # continue pages to follow from the proxy's answers

    def target(self, query=None):
        q = self.query if query is None else query
        return self.path + ("?" + urllib.parse.urlencode(q) if q else "")

    def headers(self):
        h = {"Accept": self.accept} if self.accept is not None else {}
        if self.gzip:
            h["Accept-Encoding"] = "gzip"
        return h

    def param(self, key):
        return next((v for k, v in self.query if k == key), None)

    def describe(self):
        return "GET %s%s%s" % (self.target(), "  [Accept: %s]" % self.accept if self.accept is not None else "",
                               "  [Accept-Encoding: gzip]" if self.gzip else "")


def encode_token(obj):
    raw = json.dumps(obj, separators=(",", ":")).encode() if not isinstance(obj, bytes) else obj
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token):
    pad = "=" * (-len(token) % 4)
    return json.loads(base64.urlsafe_b64decode(token + pad))


def token_rv(token):
    """The rv of a well-formed continue token, else None."""
    try:
        rv = decode_token(token).get("rv")
    except (ValueError, TypeError, AttributeError):
        return None
    return rv if isinstance(rv, int) else None


def with_token_rv(token, rv):
    """The same continue token at another rv (same start key)."""
    doc = decode_token(token)
    doc["rv"] = int(rv)
    return encode_token(doc)


class Universe:
    """What exists upstream, so requests name real namespaces, objects, nodes and RVs."""

    def __init__(self, namespaces, names, nodes, first_rv, resources=None):
        # The types requests are drawn from: the real-cluster tier adds types the test
        # apiserver does not serve.
        self.resources = resources or RESOURCES
        self.namespaces = namespaces  # namespaces holding objects
        self.names = names  # resource plural -> list of (namespace, name)
        self.nodes = nodes
        self.first_rv = first_rv  # an RV from before the proxy started
        self.recent_rvs = [first_rv]  # list RVs seen in answers, newest last
        self.tokens = []  # continue tokens seen in answers (for replay after compaction)
        self.compacted = False
        self.max_rv = int(first_rv)  # newest upstream RV seen: a lower bound for C1

    def saw_rv(self, rv):
        """Records a list RV the upstream answered with (workers share the universe)."""
        if rv and rv.isdigit():
            self.max_rv = max(self.max_rv, int(rv))
        if rv and rv.isdigit() and rv != self.recent_rvs[-1]:
            self.recent_rvs.append(rv)
            del self.recent_rvs[:-200]


class Generator:
    def __init__(self, seed, universe):
        self.rng = random.Random(seed)
        self.u = universe

    def _weighted(self, pairs):
        total = sum(w for _, w in pairs)
        x = self.rng.uniform(0, total)
        for value, w in pairs:
            x -= w
            if x <= 0:
                return value
        return pairs[-1][0]

    def _resource(self):
        return self._weighted([(r, r.weight) for r in self.u.resources])

    def _namespace(self):
        return self._weighted([(self.rng.choice(self.u.namespaces), 8), ("churn", 3), ("default", 2), ("nope", 1)])

    def _recent_rv(self):
        rvs = self.u.recent_rvs
        return self.rng.choice(rvs[-20:]) if self.rng.random() < 0.8 else self.rng.choice(rvs)

    def label_selector(self, res):
        r = self.rng
        if r.random() < 0.12:
            return r.choice(BAD_LABEL_SELECTORS)
        terms = []
        for _ in range(r.choice([1, 1, 1, 2, 3])):
            key = r.choice(res.label_keys)
            form = r.randint(0, 7)
            value = self._label_value(res, key)
            terms.append([key + "=" + value, key + "==" + value, key + "!=" + value, key, "!" + key,
                          "%s in (%s,%s)" % (key, value, self._label_value(res, key)),
                          "%s notin (%s)" % (key, value), key + " = " + value][form])
        return ",".join(terms)

    def _label_value(self, res, key):
        r = self.rng
        if key in res.label_values:
            return res.label_values[key](r)
        return {"app": "app-%d" % r.randint(0, 52), "tier": r.choice(["backend", "frontend"]),
                "team": "team-%d" % r.randint(0, 7), "version": "v1.%d" % r.randint(0, 13),
                "kubernetes.io/os": "linux", "kubernetes.io/metadata.name": r.choice(["default", "demo", "churn"]),
                }.get(key, r.choice(["x", ""]))

    def field_selector(self, res, namespace):
        r = self.rng
        if r.random() < 0.1:
            return r.choice(BAD_FIELD_SELECTORS)
        if r.random() < 0.15:
            return "%s=%s" % (r.choice(res.bad_fields), "x")
        terms = []
        for _ in range(r.choice([1, 1, 2])):
            field = r.choice(list(res.fields))
            gen = res.fields[field]
            if field == "metadata.name":
                value = r.choice(self._names(res, namespace) or ["nope"])[1]
            elif field == "metadata.namespace":
                value = r.choice([namespace or r.choice(self.u.namespaces), "churn", "nope"])
            else:
                value = gen(r, self.u)
            terms.append(field + r.choice(["=", "==", "!="]) + value)
        return ",".join(terms)

    def _names(self, res, namespace):
        names = self.u.names.get(res.plural, [])
        return [n for n in names if n[0] == namespace] if namespace and res.namespaced else names

    def next(self):
        """One request (continue pages are followed by the runner)."""
        if self.rng.random() < 0.25:
            return self.get()
        return self.list()

    def get(self):
        r = self.rng
        res = self._resource()
        if res.namespaced:
            ns = self._namespace()
            names = self._names(res, ns)
        else:
            ns, names = "", self._names(res, "")
        name = r.choice(names)[1] if names and r.random() < 0.85 else r.choice(["nope", "churn-%d" % r.randint(0, 60)])
        path = "%s/%s" % (res.collection(ns), name)
        query = []
        rv_mode = self._weighted([("unset", 45), ("0", 30), ("recent", 12), ("bad", 4), ("large", 0.15)])
        if rv_mode == "0":
            query.append(("resourceVersion", "0"))
        elif rv_mode == "recent":
            query.append(("resourceVersion", self._recent_rv()))
        elif rv_mode == "bad":
            query.append(("resourceVersion", r.choice(BAD_RVS)))
        elif rv_mode == "large":
            query.append(("resourceVersion", str(int(self.u.recent_rvs[-1]) + 10_000_000)))
        if r.random() < 0.05:  # selectors and list options do not apply to GET (S7)
            query.append(r.choice([("labelSelector", "app=nope"), ("fieldSelector", "metadata.name=other"),
                                   ("limit", "1"), ("watch", "false"), ("unknown", "x")]))
        accept = self._weighted(GET_ACCEPTS)
        mode = "exact" if rv_mode in ("bad", "large") else "relative"
        return ReadRequest("get", res, path, query, accept, mode, gzip=r.random() < 0.1)

    def list(self):
        r = self.rng
        res = self._resource()
        ns = ""
        if res.namespaced and r.random() < 0.65:
            ns = self._namespace()
        path = res.collection(ns)
        query = []
        mode = "relative"
        limit = None
        lim_mode = self._weighted([("none", 45), ("small", 30), ("medium", 15), ("bad", 5)])
        if lim_mode == "small":
            limit = str(r.randint(1, 7))
        elif lim_mode == "medium":
            limit = str(r.randint(20, 250))
        elif lim_mode == "bad":
            limit = r.choice(BAD_LIMITS)
        rv_mode = self._weighted([("unset", 32), ("0", 16), ("0-notolder", 4), ("notolder", 8), ("n", 4),
                                  ("exact", 14), ("legacy", 4), ("old", 4), ("bad", 3), ("badmatch", 5),
                                  ("continue", 4), ("large", 0.12)])
        if rv_mode == "0":
            query.append(("resourceVersion", "0"))
        elif rv_mode == "0-notolder":
            query += [("resourceVersion", "0"), ("resourceVersionMatch", "NotOlderThan")]
        elif rv_mode == "notolder":
            query += [("resourceVersion", self._recent_rv()), ("resourceVersionMatch", "NotOlderThan")]
        elif rv_mode == "n":
            query.append(("resourceVersion", self._recent_rv()))
            if limit is not None and lim_mode != "bad" and int(limit) > 0:
                mode = "exact"  # legacy limit + RV=N is Exact (R3)
        elif rv_mode == "exact":
            query += [("resourceVersion", self._recent_rv()), ("resourceVersionMatch", "Exact")]
            mode = "exact"
        elif rv_mode == "legacy":
            query.append(("resourceVersion", self._recent_rv()))
            limit = limit if lim_mode in ("small", "medium") else str(r.randint(1, 50))
            mode = "exact"
        elif rv_mode == "old":
            query += [("resourceVersion", str(r.randint(1, int(self.u.first_rv)))), ("resourceVersionMatch", "Exact")]
            mode = "exact"
        elif rv_mode == "bad":
            query.append(("resourceVersion", r.choice(BAD_RVS)))
            mode = "exact"
        elif rv_mode == "badmatch":
            query += r.choice([
                [("resourceVersionMatch", "NotOlderThan")], [("resourceVersionMatch", "Exact")],
                [("resourceVersion", "0"), ("resourceVersionMatch", "Exact")],
                [("resourceVersion", self._recent_rv()), ("resourceVersionMatch", "Foo")],
                [("resourceVersion", self._recent_rv()), ("resourceVersionMatch", "exact")],
                [("sendInitialEvents", "true")], [("sendInitialEvents", "false"), ("resourceVersion", "0")],
            ])
            mode = "exact"
        elif rv_mode == "continue":
            query += self._continue_query(res, ns)
            token = next(v for k, v in query if k == "continue")
            # A token with rv -1 continues at the latest RV: a consistent read (P7).
            mode = "relative" if token_rv(token) == -1 else "exact"
        elif rv_mode == "large":
            query += [("resourceVersion", str(int(self.u.recent_rvs[-1]) + 10_000_000)),
                      ("resourceVersionMatch", r.choice(["NotOlderThan", "Exact"]))]
            mode = "exact"
        if limit is not None:
            query.append(("limit", limit))
        if r.random() < 0.3:
            query.append(("labelSelector", self.label_selector(res)))
        if r.random() < 0.25:
            query.append(("fieldSelector", self.field_selector(res, ns)))
        if r.random() < 0.03:
            query.append(r.choice([("watch", "false"), ("watch", "0"), ("timeoutSeconds", "5"), ("pretty", "false"),
                                   ("allowWatchBookmarks", "true"), ("unknown", "1"), ("limit", "2")]))
        r.shuffle(query) if r.random() < 0.1 else None
        if mode == "exact" and rv_mode in ("n", "legacy") and reads_single_key(res, ns, query):
            mode = "relative"  # the registry's non-recursive read: NotOlderThan (R3)
        accept = self._weighted(LIST_ACCEPTS)
        follow = 0
        if limit is not None and lim_mode in ("small", "medium") and rv_mode != "continue":
            follow = r.choice([0, 1, 2, 3, 8])
        return ReadRequest("list", res, path, query, accept, mode, follow, gzip=r.random() < 0.15)

    def _continue_query(self, res, ns):
        """A continue token: replayed from an earlier answer, or tampered with (P3, R5, P7)."""
        r = self.rng
        form = r.randint(0, 9)
        start = (ns and "x\u0000") or "load-1/x\u0000"
        if form <= 2 and self.u.tokens:
            query = [("continue", r.choice(self.u.tokens))]
        elif form == 3:
            query = [("continue", encode_token({"v": "meta.k8s.io/v1", "rv": int(self.u.first_rv), "start": start}))]
        elif form == 4:
            query = [("continue", encode_token({"v": "meta.k8s.io/v1", "rv": -1, "start": start}))]
        else:
            query = [("continue", r.choice([
                "not-base64!", "eyJ2Ijoi", encode_token(b"[1,2]"), encode_token(b"{}"),
                encode_token({"v": "meta.k8s.io/v1", "rv": 0, "start": start}),
                encode_token({"v": "meta.k8s.io/v1", "rv": 5, "start": ""}),
                encode_token({"v": "meta.k8s.io/v1", "rv": 5, "start": "../x"}),
                encode_token({"v": "meta.k8s.io/v2", "rv": 5, "start": start}),
                encode_token({"v": "meta.k8s.io/v1", "rv": "5", "start": start}),
                encode_token({"v": "meta.k8s.io/v1", "rv": 5.5, "start": start}),
            ]))]
        extra = r.random()
        if extra < 0.15:
            query.append(("resourceVersion", self._recent_rv()))  # 400 (R5)
        elif extra < 0.25:
            query.append(("resourceVersion", "0"))  # the token wins
        elif extra < 0.32:
            query += [("resourceVersion", self._recent_rv()), ("resourceVersionMatch", "Exact")]  # 422
        if r.random() < 0.7:
            query.append(("limit", str(r.randint(1, 30))))
        return query
