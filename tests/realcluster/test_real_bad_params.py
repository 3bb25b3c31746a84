"""Malformed query parameters against the real kube-apiserver (issue 16, "Bad input";
contract E4, R4, R6, W1, W8): every request of tests/integration/bad_params.py goes to
the apiserver directly and through the proxy (pods and configmaps cached, secrets passed
through). The proxy's answers must equal the apiserver's (status, Status body byte for
byte, or a watch's first event and whether it ends at once), and the apiserver's must
equal the record the fast tier holds the test apiserver to.

  KCP_BAD_PARAMS_RECORD=1  rewrite tests/integration/bad_params_real.json from this
                           apiserver (after a Kubernetes upgrade; review the diff)
"""
import http.client
import os
import unittest

import realcluster

import bad_params


@realcluster.require_bin
class RealBadParamsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        plane = realcluster.start_plane(cls, "bad-params-real-", class_level=True)
        created = plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": bad_params.NAMESPACE}})
        assert created.status == 201, created.body
        for resource, body in bad_params.OBJECTS.items():
            created = plane.request("/api/v1/namespaces/%s/%s" % (bad_params.NAMESPACE, resource), "POST", body)
            assert created.status == 201, created.body
        cls.proxy = realcluster.start_proxy(cls.processes, plane, *bad_params.PROXY_ARGS)
        cls.apiserver = bad_params.summarize_all(lambda: plane.connection(timeout=30),
                                                 {"Authorization": "Bearer " + realcluster.TOKENS["admin"]})
        if os.environ.get("KCP_BAD_PARAMS_RECORD") == "1":
            bad_params.save_record(cls.apiserver)

    def test_the_recorded_answers_are_the_real_apiservers(self):
        bad_params.assert_same_answers(self, bad_params.load_record(), self.apiserver, "recorded", "kube-apiserver",
                                       " (stale: KCP_BAD_PARAMS_RECORD=1 rewrites them)")

    def test_the_proxy_answers_malformed_parameters_like_the_real_apiserver(self):
        bad_params.assert_same_answers(self, self.apiserver, bad_params.proxy_answers(self.proxy.port), "kube-apiserver",
                                       "proxy")


if __name__ == "__main__":
    unittest.main()
