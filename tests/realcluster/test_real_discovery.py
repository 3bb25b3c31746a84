"""Discovery through the proxy (issue 18: Kubernetes' components rediscover every 30 s):
/api, /apis, /api/v1, /apis/<group>[/<version>] and /version answered from memory with the
apiserver's bytes and describing headers for every Accept the clients send, 304 for a
matching If-None-Match, and a CustomResourceDefinition created or deleted shows through the
proxy as it shows on the apiserver (proxy/discovery_cache.h).
"""
import http.client
import re
import time
import unittest

import realcluster

import harness

AGGREGATED_JSON = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                   "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
AGGREGATED_PROTOBUF = ("application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                       "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                       "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                       "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                       "application/json;q=0.9")
ACCEPTS = [AGGREGATED_JSON, AGGREGATED_PROTOBUF, "application/json", "application/vnd.kubernetes.protobuf", None]
PATHS = ["/api", "/apis", "/apis?timeout=32s", "/api?timeout=nonsense", "/api/v1", "/apis/apps", "/apis/apps/v1", "/apis/example.com/v1", "/version"]
# What describes a document; the rest (Date, Audit-Id, flow-schema UIDs) is per exchange.
DESCRIBING = ("content-type", "etag", "vary", "cache-control", "content-encoding")

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "gadgets.example.org"},
       "spec": {"group": "example.org", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                "versions": [{"name": "v1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


def describing(headers):
    return sorted((k.lower(), v) for k, v in headers if k.lower() in DESCRIBING)


@realcluster.require_bin
class DiscoveryThroughProxyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        realcluster.start_plane(cls, "discovery-real-", class_level=True)
        cls.proxy = realcluster.start_proxy(cls.processes, cls.plane, "--cache", "pods", "--cache-start-wait", "5s")

    def via(self, path, accept=None, extra=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
        try:
            headers = dict(extra or {})
            if accept is not None:
                headers["Accept"] = accept
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            return realcluster.Answer(r.status, r.getheaders(), r.read())
        finally:
            conn.close()

    def direct(self, path, accept=None, extra=None):
        headers = dict(extra or {})
        if accept is not None:
            headers["Accept"] = accept
        return self.plane.request(path, headers=headers)

    def metric(self, outcome):
        text = harness.http_get("127.0.0.1", self.proxy.port, "/metrics")[2].decode()
        m = re.search(r'kube_cache_proxy_discovery_requests_total\{outcome="%s"\} (\S+)' % outcome, text)
        return float(m.group(1)) if m else 0.0

    def served_by(self, answer):
        return dict((k.lower(), v) for k, v in answer.headers).get("x-kube-cache-proxy")

    def test_documents_are_the_apiservers_and_come_from_memory(self):
        # Another test's CRD changes hold discovery back for the settle time (3 s).
        harness.wait_for(lambda: self.served_by(self.via("/apis", AGGREGATED_JSON)) == "cache", timeout=30,
                         interval=0.2, message="discovery from memory")
        for path in PATHS:
            for accept in ACCEPTS:
                with self.subTest(path=path, accept=accept):
                    first = self.via(path, accept)
                    second = self.via(path, accept)
                    want = self.direct(path, accept)
                    for got in (first, second):
                        self.assertEqual((got.status, describing(got.headers), got.body),
                                         (want.status, describing(want.headers), want.body))
                    # Only documents are kept; an error (406 for /version in protobuf) is
                    # the apiserver's to give each time.
                    self.assertEqual(self.served_by(second), "cache" if want.status == 200 else "upstream",
                                     second.headers)
        self.assertGreater(self.metric("cache"), 0)

    def test_if_none_match_is_answered_304_like_the_apiserver(self):
        want = self.direct("/apis", AGGREGATED_JSON)
        etag = dict((k.lower(), v) for k, v in want.headers)["etag"]
        for accept in (AGGREGATED_JSON, AGGREGATED_PROTOBUF):
            with self.subTest(accept=accept):
                d = self.direct("/apis", accept, {"If-None-Match": etag})
                p = self.via("/apis", accept, {"If-None-Match": etag})
                self.assertEqual((p.status, describing(p.headers), p.body), (d.status, describing(d.headers), d.body))
        # Another ETag: the whole document.
        p = self.via("/apis", AGGREGATED_JSON, {"If-None-Match": '"stale"'})
        self.assertEqual((p.status, p.body), (200, want.body))

    def test_a_crd_created_and_deleted_shows_through_the_proxy(self):
        def group_via_proxy(present):
            a = self.via("/apis", AGGREGATED_JSON)
            groups = {g["metadata"]["name"] for g in a.json()["items"]}
            return ("example.org" in groups) == present
        self.assertTrue(group_via_proxy(False))
        a = self.plane.request("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "POST", CRD)
        self.assertEqual(a.status, 201, a.body)
        start = time.monotonic()
        harness.wait_for(lambda: group_via_proxy(True), timeout=30, interval=0.1,
                         message="the new group through the proxy")
        shown = time.monotonic() - start
        # Then the proxy answers what the apiserver answers, for the group's own documents too.
        for path in ("/apis", "/apis/example.org", "/apis/example.org/v1"):
            harness.wait_for(lambda: self.via(path, AGGREGATED_JSON).body == self.direct(path, AGGREGATED_JSON).body,
                             timeout=30, interval=0.2, message="%s as the apiserver answers it" % path)
        a = self.plane.request("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.org", "DELETE")
        self.assertEqual(a.status, 200, a.body)
        start = time.monotonic()
        harness.wait_for(lambda: group_via_proxy(False), timeout=30, interval=0.1,
                         message="the deleted group gone through the proxy")
        print("discovery through the proxy: a new CRD's group shown after %.1f s, a deleted one gone after %.1f s"
              % (shown, time.monotonic() - start))
        self.assertEqual(self.via("/apis/example.org/v1", AGGREGATED_JSON).status,
                         self.direct("/apis/example.org/v1", AGGREGATED_JSON).status)


if __name__ == "__main__":
    unittest.main()
