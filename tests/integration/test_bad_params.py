"""Malformed query parameters in the fast tier (issue 16, "Bad input"; contract E4, R4,
R6, W1, W8): every request of bad_params.py goes to kube-test-apiserver and to the proxy
in front of it (pods and configmaps cached, secrets passed through). The test apiserver
must answer as kube-apiserver 1.37 did when the real tier recorded bad_params_real.json,
and the proxy as the test apiserver does.
"""
import http.client
import json
import unittest

import bad_params
import clients
import harness


def post(port, path, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 201, r.read()
        r.read()
    finally:
        conn.close()


class BadParamsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.processes = harness.Processes()
        cls.addClassCleanup(cls.processes.stop_all)
        api = clients.start_apiserver(cls.processes)
        post(api.port, "/api/v1/namespaces", {"metadata": {"name": bad_params.NAMESPACE}})
        for resource, body in bad_params.OBJECTS.items():
            post(api.port, "/api/v1/namespaces/%s/%s" % (bad_params.NAMESPACE, resource), body)
        cls.proxy = cls.processes.proxy("http://127.0.0.1:%d" % api.port, *bad_params.PROXY_ARGS)
        harness.wait_for(lambda: harness.http_get("127.0.0.1", cls.proxy.port, "/readyz")[0] == 200, timeout=30,
                         message="proxy ready")
        cls.apiserver = bad_params.summarize_all(lambda: http.client.HTTPConnection("127.0.0.1", api.port, timeout=30))

    def test_the_test_apiserver_answers_malformed_parameters_as_kube_apiserver_did(self):
        bad_params.assert_same_answers(self, bad_params.load_record(), self.apiserver, "kube-apiserver", "test apiserver")

    def test_the_proxy_answers_malformed_parameters_as_its_upstream_does(self):
        bad_params.assert_same_answers(self, self.apiserver, bad_params.proxy_answers(self.proxy.port), "test apiserver",
                                       "proxy")


if __name__ == "__main__":
    unittest.main()
