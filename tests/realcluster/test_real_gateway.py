"""Gateway mode against the real TokenReview, SubjectAccessReview and RBAC: for each
identity (admin, a user confined to one namespace, a user with no rights, an unknown
token) and each read, the proxy's status and body are byte-equal to the apiserver's.
Contract clauses: E1, E2 (Status bodies); docs/security.md rows "authentication" and
"authorization".
"""
import http.client
import json
import os
import re
import ssl
import subprocess
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
        cls.pki_ca = pki["ca"]
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

    def test_client_go_negotiates_http2_and_multiplexes_its_informers_on_one_connection(self):
        """Issue 18: client-go's transport offers h2 by ALPN, as to the apiserver; the
        gateway answers every list and watch of three informers on one HTTP/2 connection."""
        kubeconfig = os.path.join(self.workdir, "gateway-admin.kubeconfig")
        with open(kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: g\n  cluster:\n    server: https://127.0.0.1:%d\n"
                    "    certificate-authority: %s\nusers:\n- name: u\n  user:\n    token: %s\ncontexts:\n- name: g\n"
                    "  context:\n    cluster: g\n    user: u\ncurrent-context: g\n"
                    % (self.proxy.port, self.pki_ca, realcluster.TOKENS["admin"]))

        def connections():
            """HTTP/2 connections accepted, and connections open (this scrape's included)."""
            status, body = self.via_proxy("/metrics", realcluster.TOKENS["admin"])
            m = re.search(r'kube_cache_proxy_http2_connections_total\{negotiation="alpn"\} (\d+)', body.decode())
            open_now = re.search(r"kube_cache_proxy_open_connections (\d+)", body.decode())
            return int(m.group(1)) if m else 0, int(open_now.group(1))

        accepted_before, open_before = connections()
        informer = subprocess.Popen([realcluster.tool("informer"), "--kubeconfig", kubeconfig, "--resources",
                                     "configmaps,secrets,pods", "--report-protocol"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(informer.kill)
        counts = None
        for line in informer.stdout:
            event = json.loads(line)
            if event.get("event") == "protocols":
                counts = event["counts"]
                break
        self.assertIsNotNone(counts, informer.stderr.read() if informer.poll() is not None else "no protocols line")
        self.assertEqual(set(counts), {"HTTP/2.0"}, counts)
        self.assertGreaterEqual(counts["HTTP/2.0"], 3)  # a list or watch-list per informer
        # Go's transport may dial once per informer before the first handshake ends and then
        # keeps one HTTP/2 connection for all (x/net/http2's addConnIfNeeded closes the
        # others), as against the apiserver: one stays open, carrying every watch.
        self.assertGreaterEqual(connections()[0] - accepted_before, 1)
        harness.wait_for(lambda: connections()[1] - open_before == 1, timeout=10,
                         message="one connection left open for the three informers: %s" % (connections(),))

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
