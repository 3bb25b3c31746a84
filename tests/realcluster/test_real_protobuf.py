"""kube-apiserver's protobuf answers, read and written again by the proxy's protobuf code
(cache/protobuf/protobuf_list.h, cache/protobuf/protobuf_object.h), come out byte for byte as the apiserver
wrote them: LISTs of several built-in resources (contract N2: the k8s\\0 envelope, ListMeta,
items) and watch streams (W2: length-prefixed WatchEvent envelopes around enveloped
objects), with the keys and RVs the JSON answers give. Issue 18: the ground the protobuf
serving will stand on.
"""
import http.client
import json
import os
import urllib.parse
import subprocess
import tempfile
import unittest

import realcluster

import harness

PROTOBUF = "application/vnd.kubernetes.protobuf"
LISTS = ["/api/v1/namespaces", "/api/v1/namespaces/kube-system/configmaps", "/api/v1/services",
         "/api/v1/serviceaccounts", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
         "/apis/coordination.k8s.io/v1/leases", "/api/v1/nodes"]


def roundtrip(mode, body):
    with tempfile.NamedTemporaryFile(suffix=".pb") as f:
        f.write(body)
        f.flush()
        out = subprocess.run([os.path.join(harness.BIN_DIR, "protobuf-roundtrip"), mode, f.name],
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def json_keys(answer):
    out = []
    for item in answer.json()["items"]:
        m = item["metadata"]
        out.append([("%s/%s" % (m["namespace"], m["name"])) if m.get("namespace") else m["name"], m["resourceVersion"]])
    return out


@realcluster.require_bin
class ProtobufFramingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        realcluster.start_plane(cls, "protobuf-real-", class_level=True)

    def test_lists_read_and_write_back_byte_for_byte(self):
        for path in LISTS:
            with self.subTest(path=path):
                a = self.plane.request(path, headers={"Accept": PROTOBUF})
                self.assertEqual(a.status, 200, a.body[:200])
                self.assertEqual(dict(a.headers).get("Content-Type"), PROTOBUF)
                got = roundtrip("list", a.body)
                self.assertTrue(got["equal"], got)
                # The same objects and RVs as the JSON LIST at the list's RV.
                j = self.plane.request(path + "?resourceVersion=%s&resourceVersionMatch=Exact" % got["resourceVersion"])
                self.assertEqual(j.status, 200, j.body[:200])
                self.assertEqual(got["items"], json_keys(j))

    def test_paged_list_carries_continue_and_remaining_count(self):
        a = self.plane.request("/api/v1/namespaces/kube-system/configmaps?limit=1", headers={"Accept": PROTOBUF})
        self.assertEqual(a.status, 200)
        got = roundtrip("list", a.body)
        self.assertTrue(got["equal"], got)
        self.assertEqual(len(got["items"]), 1)
        total = len(self.plane.request("/api/v1/namespaces/kube-system/configmaps").json()["items"])
        self.assertGreater(total, 1)
        self.assertNotEqual(got["continue"], "")
        self.assertEqual(got["remainingItemCount"], total - 1)

    def test_watch_frames_read_and_write_back_byte_for_byte(self):
        ns = "kube-system"
        rv = self.plane.request("/api/v1/namespaces/%s/configmaps" % ns).json()["metadata"]["resourceVersion"]
        for i in range(3):
            a = self.plane.request("/api/v1/namespaces/%s/configmaps" % ns, "POST",
                                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb-%d" % i},
                                    "data": {"k": "v"}})
            self.assertEqual(a.status, 201, a.body)
        self.assertEqual(self.plane.request("/api/v1/namespaces/%s/configmaps/pb-1" % ns, "DELETE").status, 200)
        # A watch from before the writes with a short timeout: the apiserver ends it itself.
        w = self.plane.request("/api/v1/namespaces/%s/configmaps?watch=true&resourceVersion=%s&timeoutSeconds=2"
                               "&allowWatchBookmarks=true" % (ns, rv), headers={"Accept": PROTOBUF + ";stream=watch"})
        self.assertEqual(w.status, 200)
        self.assertEqual(dict(w.headers).get("Content-Type"), PROTOBUF + ";stream=watch")
        got = roundtrip("watch", w.body)
        self.assertTrue(got["equal"], got)
        changes = [[t, key[0]] for t, key in got["events"] if t != "BOOKMARK" and key[0].startswith(ns + "/pb-")]
        self.assertEqual(changes, [["ADDED", ns + "/pb-0"], ["ADDED", ns + "/pb-1"], ["ADDED", ns + "/pb-2"],
                                   ["DELETED", ns + "/pb-1"]])


def frames(body):
    """The payloads (WatchEvent messages) of a de-chunked protobuf watch body (W2)."""
    out = []
    while body:
        n = int.from_bytes(body[:4], "big")
        out.append(body[4:4 + n])
        body = body[4 + n:]
    return out


def event_type(payload):
    """WatchEvent field 1, the type: `0a <len> <name>` first."""
    assert payload[0] == 0x0a, payload[:8]
    return payload[2:2 + payload[1]].decode()


def proxy_bookmark(sample_payload, rv, end):
    """The payload the proxy writes for a bookmark at `rv` shaped like `sample_payload`."""
    with tempfile.NamedTemporaryFile(suffix=".pb") as f:
        f.write(sample_payload)
        f.flush()
        out = subprocess.run([os.path.join(harness.BIN_DIR, "protobuf-roundtrip"), "bookmark", f.name, str(rv),
                              "1" if end else "0"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return bytes.fromhex(out.stdout.strip())


# The resources the issue names, with their collections.
CACHED = {"pods": "/api/v1/pods", "nodes": "/api/v1/nodes", "configmaps": "/api/v1/configmaps",
          "secrets": "/api/v1/secrets", "services": "/api/v1/services",
          "endpointslices.discovery.k8s.io": "/apis/discovery.k8s.io/v1/endpointslices",
          "leases.coordination.k8s.io": "/apis/coordination.k8s.io/v1/leases", "events": "/api/v1/events",
          "deployments.apps": "/apis/apps/v1/deployments", "replicasets.apps": "/apis/apps/v1/replicasets"}
GO_CLIENT = PROTOBUF + ", */*"
METADATA_LIST = PROTOBUF + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA = PROTOBUF + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
SERVED_BY = "X-Kube-Cache-Proxy"


def load(plane, ns="pb-data"):
    """A few objects of every cached resource (the fake nodes and their leases come from churn)."""
    plane.churn(nodes=3, interval="1h")
    assert plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": ns}}).status in (201, 409)
    template = {"metadata": {"labels": {"app": "pb"}},
                "spec": {"containers": [{"name": "c", "image": "registry.example.com/app:1"}]}}
    posts = []
    for i in range(12):
        posts.append(("/api/v1/namespaces/%s/pods" % ns, {
            "metadata": {"name": "pod-%d" % i, "labels": {"app": "app-%d" % (i % 3), "tier": "web"}},
            "spec": {"nodeName": "fake-node-%d" % (i % 3), "restartPolicy": ["Always", "Never"][i % 2],
                     "containers": [{"name": "c", "image": "registry.example.com/app:%d" % i}]}}))
    for i in range(6):
        posts.append(("/api/v1/namespaces/%s/configmaps" % ns, {"metadata": {"name": "cm-%d" % i}, "data": {"k": str(i)}}))
        posts.append(("/api/v1/namespaces/%s/secrets" % ns, {"metadata": {"name": "secret-%d" % i},
                                                            "type": ["Opaque", "example.com/x"][i % 2],
                                                            "stringData": {"k": str(i)}}))
    for i in range(3):
        posts.append(("/api/v1/namespaces/%s/services" % ns, {"metadata": {"name": "svc-%d" % i}, "spec": {
            "type": ["ClusterIP", "NodePort"][i % 2], "ports": [{"port": 80 + i}], "selector": {"app": "pb"}}}))
        posts.append(("/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices" % ns, {
            "metadata": {"name": "slice-%d" % i, "labels": {"kubernetes.io/service-name": "svc-%d" % i}},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.%d" % (i + 1)]}]}))
        posts.append(("/api/v1/namespaces/%s/events" % ns, {
            "metadata": {"name": "event-%d" % i}, "involvedObject": {"kind": "Pod", "name": "pod-%d" % i,
                                                                      "namespace": ns},
            "reason": "Scheduled", "type": "Normal", "source": {"component": "default-scheduler"}}))
        posts.append(("/apis/apps/v1/namespaces/%s/deployments" % ns, {
            "metadata": {"name": "deploy-%d" % i}, "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "pb"}},
                                                             "template": template}}))
        posts.append(("/apis/apps/v1/namespaces/%s/replicasets" % ns, {
            "metadata": {"name": "rs-%d" % i}, "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "pb"}},
                                                         "template": template}}))
    for path, body in posts:
        a = plane.request(path, "POST", body)
        assert a.status == 201, (path, a.body)


@realcluster.require_bin
class ProtobufCacheTest(unittest.TestCase):
    """Protobuf GET and LIST answered from the proxy's protobuf caches, byte for byte what
    the apiserver answers the same request (N2, N4, R3, R5, P1-P4, S1, S4, E1)."""

    @classmethod
    def setUpClass(cls):
        plane = realcluster.start_plane(cls, "protobuf-cache-", class_level=True)
        load(plane)
        # The compressed store (issue 20): current objects and old versions packed, so that
        # every answer below is also one from packed objects; the other real-apiserver
        # tests run the default.
        cls.proxy = realcluster.start_proxy(cls.processes, plane, "--cache", ",".join(CACHED),
                                            "--store-encoding", "compressed")
        cls.requests = 0
        cls.mismatches = []

    def via_proxy(self, path, accept):
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
        try:
            conn.request("GET", path, headers={"Accept": accept})
            r = conn.getresponse()
            return realcluster.Answer(r.status, r.getheaders(), r.read())
        finally:
            conn.close()

    def cache_rv(self, collection):
        """Waits until the protobuf cache answers (the first requests start it) and returns
        its store's RV (RV=0 reads the store as it is; a consistent read may say a newer,
        proven revision, whose pages the cache cannot serve)."""
        def served():
            a = self.via_proxy(collection + "?resourceVersion=0", GO_CLIENT)
            by = dict(a.headers).get(SERVED_BY, "")
            # Until the protobuf cache has synced, the JSON cache answers in JSON.
            return (a.status == 200 and by.startswith("cache; rv=") and
                    dict(a.headers).get("Content-Type") == PROTOBUF and int(by.split("=")[1]))
        return harness.wait_for(served, timeout=60, interval=0.2, message="protobuf cache of " + collection)

    def compare(self, path, accept, retries=0):
        """The proxy's answer must come from the cache and equal the apiserver's, byte for
        byte. An unpinned read may legitimately race a write: `retries` asks both again."""
        for attempt in range(retries + 1):
            mine = self.via_proxy(path, accept)
            theirs = self.plane.request(path, headers={"Accept": accept})
            type(self).requests += 1
            if (mine.status, mine.body) == (theirs.status, theirs.body):
                break
        served_by = dict(mine.headers).get(SERVED_BY, "")
        if not served_by.startswith("cache"):
            type(self).mismatches.append((path, accept, "served by " + served_by))
        elif (mine.status, mine.body) != (theirs.status, theirs.body):
            type(self).mismatches.append((path, accept, mine.status, theirs.status, mine.body[:120], theirs.body[:120]))
        self.assertEqual(dict(mine.headers).get("Content-Type"), dict(theirs.headers).get("Content-Type"), path)
        return mine

    def test_get_and_list_from_the_protobuf_cache_equal_the_apiservers(self):
        for name, collection in CACHED.items():
            with self.subTest(resource=name):
                rv = self.cache_rv(collection)
                exact = "resourceVersion=%d&resourceVersionMatch=Exact" % rv
                self.compare(collection + "?" + exact, GO_CLIENT)
                self.compare(collection + "?" + exact, METADATA_LIST)
                # P1-P4: every page of a paged list, continue tokens and remainingItemCount included.
                query = collection + "?limit=2&" + exact
                for _ in range(50):
                    answer = self.compare(query, GO_CLIENT)
                    got = roundtrip("list", answer.body)
                    if not got["continue"]:
                        break
                    query = collection + "?limit=2&continue=" + urllib.parse.quote(got["continue"])
                items = self.plane.request(collection + "?" + exact).json()["items"]
                self.assertGreater(len(items), 0, collection)
                for item in items[:6]:
                    m = item["metadata"]
                    path = collection if not m.get("namespace") else collection.replace(
                        collection.rsplit("/", 1)[1], "namespaces/%s/%s" % (m["namespace"], collection.rsplit("/", 1)[1]))
                    path += "/" + m["name"]
                    self.compare(path + "?resourceVersion=0", GO_CLIENT, retries=3)
                    self.compare(path + "?resourceVersion=0", METADATA, retries=3)
                # E1: NotFound as a protobuf Status.
                namespaced = items[0]["metadata"].get("namespace")
                missing = (collection.replace(collection.rsplit("/", 1)[1], "namespaces/pb-data/" +
                                              collection.rsplit("/", 1)[1]) if namespaced else collection) + "/absent"
                self.compare(missing + "?resourceVersion=0", GO_CLIENT)

    def test_selectors_on_protobuf_objects(self):
        rv = self.cache_rv("/api/v1/pods")
        exact = "resourceVersion=%d&resourceVersionMatch=Exact" % rv
        for query in ["labelSelector=app%3Dapp-1", "labelSelector=tier%21%3Dweb", "fieldSelector=spec.nodeName%3Dfake-node-2",
                      "fieldSelector=spec.restartPolicy%3DNever,metadata.namespace%3Dpb-data",
                      "fieldSelector=status.phase%3DPending", "fieldSelector=spec.hostNetwork%3Dfalse"]:
            answer = self.compare("/api/v1/pods?%s&%s" % (query, exact), GO_CLIENT)
            self.assertGreater(len(roundtrip("list", answer.body)["items"]), 0 if "tier" in query else 1, query)
        rv = self.cache_rv("/api/v1/secrets")
        self.compare("/api/v1/secrets?fieldSelector=type%%3Dexample.com%%2Fx&resourceVersion=%d&resourceVersionMatch=Exact"
                     % rv, GO_CLIENT)
        rv = self.cache_rv("/api/v1/events")
        self.compare("/api/v1/events?fieldSelector=source%%3Ddefault-scheduler,involvedObject.name%%3Dpod-1"
                     "&resourceVersion=%d&resourceVersionMatch=Exact" % rv, GO_CLIENT)
        rv = self.cache_rv("/api/v1/services")
        self.compare("/api/v1/services?fieldSelector=spec.type%%3DNodePort&resourceVersion=%d&resourceVersionMatch=Exact"
                     % rv, GO_CLIENT)

    def watch_both(self, path, accept=GO_CLIENT):
        """The same protobuf watch through the proxy (which must answer from its cache) and
        directly; both end by timeoutSeconds."""
        mine = self.via_proxy(path, accept)
        theirs = self.plane.request(path, headers={"Accept": accept})
        self.assertEqual(mine.status, 200, mine.body[:200])
        self.assertEqual(theirs.status, 200, theirs.body[:200])
        self.assertEqual(dict(mine.headers).get(SERVED_BY), "cache")
        self.assertEqual(dict(mine.headers).get("Content-Type"), PROTOBUF + ";stream=watch")
        return frames(mine.body), frames(theirs.body)

    def test_watch_list_from_the_protobuf_cache(self):
        """W9 in protobuf: the initial ADDED events byte for byte, then the initial-events-end
        bookmark shaped like the apiserver's (only its RV may differ: each side proves its own)."""
        for name in ["configmaps", "pods", "deployments.apps"]:
            with self.subTest(resource=name):
                collection = CACHED[name]
                self.cache_rv(collection)
                ns_path = collection.replace(collection.rsplit("/", 1)[1], "namespaces/pb-data/" +
                                             collection.rsplit("/", 1)[1])
                path = ns_path + ("?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                                  "&allowWatchBookmarks=true&timeoutSeconds=2")

                def served():
                    # The first watch-list may pass through while the cache's bookmark shape is unknown.
                    return dict(self.via_proxy(collection + "?watch=1&timeoutSeconds=1&allowWatchBookmarks=true",
                                               GO_CLIENT).headers).get(SERVED_BY) == "cache"
                harness.wait_for(served, timeout=90, interval=1, message="protobuf watch of %s from the cache" % name)
                mine, theirs = self.watch_both(path)
                added_mine = [f for f in mine if event_type(f) == "ADDED"]
                added_theirs = [f for f in theirs if event_type(f) == "ADDED"]
                self.assertGreater(len(added_theirs), 0)
                self.assertEqual(added_mine, added_theirs)
                type(self).requests += 1
                ends_mine = [f for f in mine if event_type(f) == "BOOKMARK"]
                ends_theirs = [f for f in theirs if event_type(f) == "BOOKMARK"]
                self.assertGreater(len(ends_theirs), 0)
                self.assertGreater(len(ends_mine), 0)
                # Rewriting the apiserver's own end bookmark at its own RV gives its bytes back,
                theirs_rv = self.bookmark_rv(ends_theirs[0])
                self.assertEqual(proxy_bookmark(ends_theirs[0], theirs_rv, True), ends_theirs[0])
                # and the proxy's is that shape at the proxy's RV.
                mine_rv = self.bookmark_rv(ends_mine[0])
                self.assertEqual(ends_mine[0], proxy_bookmark(ends_theirs[0], mine_rv, True))

    def bookmark_rv(self, payload):
        with tempfile.NamedTemporaryFile(suffix=".pb") as f:
            f.write(len(payload).to_bytes(4, "big") + payload)
            f.flush()
            with open(f.name, "rb") as again:
                got = roundtrip("watch", again.read())
        return int(got["events"][0][1][1])

    def test_watch_resumed_from_an_rv_streams_the_apiservers_frames(self):
        """W3, W4 in protobuf: ADDED, MODIFIED and DELETED after an RV, frame for frame."""
        rv = self.cache_rv("/api/v1/configmaps")
        base = "/api/v1/namespaces/pb-data/configmaps"
        for i in range(3):
            self.assertEqual(self.plane.request(base, "POST", {"metadata": {"name": "w-%d" % i}, "data": {"k": "v"}}).status, 201)
        a = self.plane.request(base + "/w-1", "PATCH", {"data": {"k": "changed"}},
                               content_type="application/merge-patch+json")
        self.assertEqual(a.status, 200, a.body)
        self.assertEqual(self.plane.request(base + "/w-2", "DELETE").status, 200)
        last = self.plane.request(base + "/w-0").json()["metadata"]["resourceVersion"]
        harness.wait_for(lambda: self.cache_rv("/api/v1/configmaps") >= int(last), timeout=10, interval=0.1)
        path = base + "?watch=1&resourceVersion=%d&timeoutSeconds=2" % rv
        mine, theirs = self.watch_both(path)
        changes_mine = [f for f in mine if event_type(f) != "BOOKMARK"]
        changes_theirs = [f for f in theirs if event_type(f) != "BOOKMARK"]
        self.assertEqual([event_type(f) for f in changes_theirs], ["ADDED", "ADDED", "ADDED", "MODIFIED", "DELETED"])
        self.assertEqual(changes_mine, changes_theirs)
        type(self).requests += 1

    def packed_pod_versions(self, family="kube_cache_proxy_cache_history_packed_versions"):
        """{encoding: old pod versions the proxy's history keeps packed} (issue 20), or of
        another pod gauge by `family`."""
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
        conn.request("GET", "/metrics")
        out = {}
        for line in conn.getresponse().read().decode().splitlines():
            if line.startswith(family + "{") and 'resource="pods"' in line:
                encoding = line.split('encoding="')[1].split('"')[0]
                out[encoding] = out.get(encoding, 0) + float(line.rsplit(" ", 1)[1])
        conn.close()
        return out

    def test_resume_and_exact_read_from_packed_versions_equal_the_apiservers(self):
        """Issue 20 against the real apiserver: once the proxy packed the current pods and
        the superseded pod versions (--store-encoding compressed), GETs of packed pods, a
        watch resumed from before the changes (W3, W4) and an Exact LIST at that RV (R3)
        equal kube-apiserver's, in JSON and in protobuf."""
        self.cache_rv("/api/v1/pods")  # the protobuf cache exists beside the JSON one
        harness.wait_for(lambda: all(self.packed_pod_versions("kube_cache_proxy_cache_packed_objects").get(enc, 0) > 0
                                     for enc in ("json", "protobuf")),
                         timeout=30, interval=0.2, message="the proxy packed the current pods")
        for name in ("pod-1", "pod-2"):
            path = "/api/v1/namespaces/pb-data/pods/%s?resourceVersion=0" % name
            for accept in (GO_CLIENT, "application/json"):
                self.compare(path, accept, retries=3)
        base = "/api/v1/namespaces/pb-data/pods"
        rv = int(self.plane.request(base).json()["metadata"]["resourceVersion"])
        before = self.packed_pod_versions()
        last = 0
        for step in range(2):
            for name in ("pod-4", "pod-5"):
                a = self.plane.request(base + "/" + name, "PATCH", {"metadata": {"labels": {"packed": str(step)}}},
                                       content_type="application/merge-patch+json")
                self.assertEqual(a.status, 200, a.body)
                last = int(a.json()["metadata"]["resourceVersion"])
        # Four superseded versions per encoding, packed by the proxy's background thread.
        harness.wait_for(lambda: all(self.packed_pod_versions().get(enc, 0) >= before.get(enc, 0) + 4
                                     for enc in ("json", "protobuf")),
                         timeout=30, interval=0.2, message="the proxy packed the old pod versions")
        self.assertGreaterEqual(self.cache_rv("/api/v1/pods"), last)
        path = base + "?watch=1&resourceVersion=%d&timeoutSeconds=2" % rv
        mine, theirs = self.watch_both(path)
        self.assertEqual([event_type(f) for f in theirs], ["MODIFIED"] * 4)
        self.assertEqual(mine, theirs)
        mine_json = self.via_proxy(path, "application/json")
        theirs_json = self.plane.request(path)
        self.assertEqual(dict(mine_json.headers).get(SERVED_BY), "cache")
        self.assertEqual(theirs_json.body.count(b"\n"), 4)
        self.assertEqual(mine_json.body, theirs_json.body)
        exact = base + "?resourceVersion=%d&resourceVersionMatch=Exact" % rv
        for accept in (GO_CLIENT, "application/json"):
            mine, theirs = self.via_proxy(exact, accept), self.plane.request(exact, headers={"Accept": accept})
            self.assertTrue(dict(mine.headers).get(SERVED_BY, "").startswith("cache"), accept)
            self.assertEqual((mine.status, mine.body), (theirs.status, theirs.body), accept)
        type(self).requests += 4

    def test_watch_of_every_type_streams_the_apiservers_frames(self):
        """W3 in protobuf for each of the ten types of issue 18: a change after the cache's RV,
        as full objects and as PartialObjectMetadata, frame for frame."""
        for name, collection in CACHED.items():
            with self.subTest(resource=name):
                rv = self.cache_rv(collection)
                m = self.plane.request(collection + "?limit=1").json()["items"][0]["metadata"]
                plural = collection.rsplit("/", 1)[1]
                scope = (collection.replace(plural, "namespaces/%s/%s" % (m["namespace"], plural))
                         if m.get("namespace") else collection)
                path = scope + "/" + m["name"]
                a = self.plane.request(path, "PATCH", {"metadata": {"labels": {"watched": "after-%d" % rv}}},
                                       content_type="application/merge-patch+json")
                self.assertEqual(a.status, 200, a.body)
                changed = int(a.json()["metadata"]["resourceVersion"])
                harness.wait_for(lambda: self.cache_rv(collection) >= changed, timeout=10, interval=0.1)
                # Only this object: leases and events have other writers (the control plane's).
                query = "?watch=1&fieldSelector=metadata.name%%3D%s&resourceVersion=%d&timeoutSeconds=1" % (m["name"], rv)
                for accept in (GO_CLIENT, METADATA):
                    mine, theirs = self.watch_both(scope + query, accept)
                    changes = [f for f in theirs if event_type(f) != "BOOKMARK"]
                    self.assertIn("MODIFIED", [event_type(f) for f in changes], accept)
                    self.assertEqual([f for f in mine if event_type(f) != "BOOKMARK"], changes, accept)
                    type(self).requests += 1

    def test_metadata_watch_from_the_protobuf_cache(self):
        """N4 for watches, what client-go's metadata informers (the garbage collector, quota)
        send: PartialObjectMetadata events and bookmarks in protobuf, frame for frame."""
        rv = self.cache_rv("/api/v1/secrets")
        base = "/api/v1/namespaces/pb-data/secrets"
        self.assertEqual(self.plane.request(base, "POST", {"metadata": {"name": "m-0"}, "stringData": {"k": "v"}}).status, 201)
        self.assertEqual(self.plane.request(base + "/m-0", "DELETE").status, 200)
        harness.wait_for(lambda: self.cache_rv("/api/v1/secrets") > rv, timeout=10, interval=0.1)
        mine, theirs = self.watch_both(base + "?watch=1&resourceVersion=%d&timeoutSeconds=2" % rv, METADATA)
        changes = [f for f in theirs if event_type(f) != "BOOKMARK"]
        self.assertEqual([event_type(f) for f in changes], ["ADDED", "DELETED"])
        self.assertEqual([f for f in mine if event_type(f) != "BOOKMARK"], changes)
        self.assertIn(b"PartialObjectMetadata", changes[0])
        # Watch-list: the state as metadata, then the end bookmark as PartialObjectMetadata.
        mine, theirs = self.watch_both(base + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                                       "&allowWatchBookmarks=true&timeoutSeconds=2", METADATA)
        self.assertEqual([f for f in mine if event_type(f) == "ADDED"], [f for f in theirs if event_type(f) == "ADDED"])
        ends_mine = [f for f in mine if event_type(f) == "BOOKMARK"]
        ends_theirs = [f for f in theirs if event_type(f) == "BOOKMARK"]
        self.assertTrue(ends_mine and ends_theirs)
        if self.bookmark_rv(ends_mine[0]) == self.bookmark_rv(ends_theirs[0]):
            self.assertEqual(ends_mine[0], ends_theirs[0])
        else:
            self.assertEqual(len(ends_mine[0]) - len(str(self.bookmark_rv(ends_mine[0]))),
                             len(ends_theirs[0]) - len(str(self.bookmark_rv(ends_theirs[0]))))
        type(self).requests += 2

    def test_zzz_no_mismatch(self):
        """Runs last (unittest orders by name): every comparison above agreed."""
        self.assertEqual(type(self).mismatches, [], "%d of %d requests differ" % (len(type(self).mismatches),
                                                                                  type(self).requests))
        print("protobuf cache: %d requests compared, %d mismatches" % (type(self).requests, len(type(self).mismatches)))


if __name__ == "__main__":
    unittest.main()
