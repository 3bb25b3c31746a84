"""Upstream TLS: CA verification, client certificate, bearer token."""
import json
import unittest

import os
import sys

# The shared helpers (harness, clients, h2client) live one folder up.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import harness  # noqa: E402


class UpstreamTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.pki_workdir(cls)
        cls.procs = harness.Processes()
        cls.addClassCleanup(cls.procs.stop_all)
        cls.upstream = cls.procs.stub_upstream("--cert", cls.pki["server_cert"], "--key", cls.pki["server_key"],
                                               "--client-ca", cls.pki["ca"], "--token", "s3cret")

    def start_proxy(self, *args):
        return self.procs.proxy("https://127.0.0.1:%d" % self.upstream.port, *args)

    def test_ca_client_certificate_and_token_reach_an_mtls_upstream(self):
        proxy = self.start_proxy("--certificate-authority", self.pki["ca"], "--client-certificate",
                                 self.pki["client_cert"], "--client-key", self.pki["client_key"], "--token", "s3cret")
        for _ in range(3):  # the second and third reuse the pooled TLS connection
            status, _, body = harness.http_get(proxy.host, proxy.port, "/api/v1/namespaces/default/pods",
                                               headers={"Authorization": "Bearer someone-else"})
            self.assertEqual(status, 200, body)
            report = json.loads(body)
            self.assertEqual(report["client_cert_subject"]["commonName"], "kube-cache-proxy")
            self.assertIn(["Authorization", "Bearer s3cret"], report["headers"])

    def test_tls_server_name_is_used_for_verification(self):
        proxy = self.start_proxy("--certificate-authority", self.pki["ca"], "--client-certificate",
                                 self.pki["client_cert"], "--client-key", self.pki["client_key"], "--token", "s3cret",
                                 "--tls-server-name", "kubernetes.default.svc")
        status, _, body = harness.http_get(proxy.host, proxy.port, "/api/v1/pods")
        self.assertEqual(status, 503)
        self.assertIn("failed to verify certificate", json.loads(body)["message"])

    def test_a_wrong_ca_gives_a_503_naming_the_verification_error(self):
        proxy = self.start_proxy("--certificate-authority", self.pki["other_ca"], "--client-certificate",
                                 self.pki["client_cert"], "--client-key", self.pki["client_key"], "--token", "s3cret")
        status, headers, body = harness.http_get(proxy.host, proxy.port, "/api/v1/pods")
        self.assertEqual(status, 503)
        message = json.loads(body)["message"]
        self.assertIn("error trying to reach upstream https://127.0.0.1:%d" % self.upstream.port, message)
        # OpenSSL's own words for the failure, e.g. "self-signed certificate in certificate chain".
        self.assertIn("tls: failed to verify certificate: x509: ", message)
        status, _, _ = harness.http_get(proxy.host, proxy.port, "/healthz")
        self.assertEqual(status, 200)

    def test_insecure_skip_tls_verify_connects_without_a_ca(self):
        proxy = self.start_proxy("--insecure-skip-tls-verify", "--client-certificate", self.pki["client_cert"],
                                 "--client-key", self.pki["client_key"], "--token", "s3cret")
        status, _, _ = harness.http_get(proxy.host, proxy.port, "/api/v1/pods")
        self.assertEqual(status, 200)

    def test_a_missing_token_gets_the_upstream_401(self):
        proxy = self.start_proxy("--certificate-authority", self.pki["ca"], "--client-certificate",
                                 self.pki["client_cert"], "--client-key", self.pki["client_key"])
        status, _, body = harness.http_get(proxy.host, proxy.port, "/api/v1/pods")
        self.assertEqual(status, 401)
        self.assertEqual(json.loads(body)["reason"], "Unauthorized")


if __name__ == "__main__":
    unittest.main()
