"""Gateway mode against the real TokenReview, SubjectAccessReview and RBAC: for each
identity (admin, a user confined to one namespace, a user with no rights, an unknown
token) and each read, the proxy's status and body are byte-equal to the apiserver's.
Contract clauses: E1, E2 (Status bodies); docs/security.md rows "authentication" and
"authorization".
"""
import http.client
import ssl
import unittest

import realcluster

import harness

READS = [
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/pods/web-0",
    "/api/v1/namespaces/limited/configmaps",
    "/api/v1/pods",
    "/api/v1/namespaces",
    "/api/v1/namespaces/demo",
    "/apis/example.com/v1/namespaces/default/widgets",
    "/apis/example.com/v1/namespaces/default/widgets/widget-1",
    "/api/v1/namespaces/default/pods?watch=1&resourceVersion=0&timeoutSeconds=1",
    "/api/v1/namespaces/limited/configmaps?watch=1&timeoutSeconds=1",
]


@realcluster.require_bin
class GatewayAgainstRealRbacTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        realcluster.start_plane(cls, "gateway-real-", class_level=True)
        pki = harness.make_pki(cls.workdir)
        cls.proxy_ssl = ssl.create_default_context(cafile=pki["ca"])
        cls.proxy = realcluster.start_proxy(
            cls.processes, cls.plane, "--mode", "gateway", "--tls-cert-file", pki["server_cert"],
            "--tls-private-key-file", pki["server_key"], "--cache", "pods,configmaps,namespaces,widgets.example.com",
            who="proxy", tls=cls.proxy_ssl)

    def get(self, conn, path, token):
        try:
            conn.request("GET", path, headers={"Authorization": "Bearer " + token, "Accept": "application/json"})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def via_proxy(self, path, token):
        return self.get(http.client.HTTPSConnection("127.0.0.1", self.proxy.port, context=self.proxy_ssl, timeout=30),
                        path, token)

    def direct(self, path, token):
        return self.get(self.plane.connection(), path, token)

    def test_refusals_are_byte_equal_and_allowed_reads_succeed(self):
        identities = dict(realcluster.TOKENS)
        identities["unknown"] = "no-such-token"
        for who in ("limited", "nobody", "unknown", "admin"):
            for path in READS:
                with self.subTest(who=who, path=path):
                    want = self.direct(path, identities[who])
                    got = self.via_proxy(path, identities[who])
                    self.assertEqual(got[0], want[0])
                    if want[0] in (401, 403):
                        self.assertEqual(got[1], want[1])
                    elif "watch=1" not in path:
                        self.assertEqual(got[0], 200)

    def test_a_node_lists_its_own_pods_by_selector_as_the_node_authorizer_allows(self):
        """Issue 16 (lower): reviews carry the request's selectors (AuthorizeWithSelectors),
        so the Node authorizer allows system:node:fake-node-1 to list and watch pods with
        spec.nodeName=fake-node-1 through the proxy as directly, and refuses the rest alike."""
        token = realcluster.TOKENS["node-1"]
        for path in ("/api/v1/pods?fieldSelector=spec.nodeName%3Dfake-node-1",
                     "/api/v1/pods?fieldSelector=spec.nodeName%3Dfake-node-1&resourceVersion=0",
                     "/api/v1/pods?fieldSelector=spec.nodeName%3Dfake-node-1&watch=1&timeoutSeconds=1",
                     "/api/v1/pods", "/api/v1/pods?fieldSelector=spec.nodeName%3Dfake-node-2",
                     "/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3Dfake-node-1"):
            with self.subTest(path=path):
                want = self.direct(path, token)
                got = self.via_proxy(path, token)
                self.assertEqual(got[0], want[0], got[1][:300])
                if want[0] == 403:
                    self.assertEqual(got[1], want[1])
        self.assertEqual(self.direct("/api/v1/pods?fieldSelector=spec.nodeName%3Dfake-node-1", token)[0], 200)
        self.assertEqual(self.direct("/api/v1/pods", token)[0], 403)


if __name__ == "__main__":
    unittest.main()
