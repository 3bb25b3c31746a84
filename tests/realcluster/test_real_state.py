"""Saved state against a real cluster (issue 36, finding 2): each state file names the
cluster it came from by the UID of its kube-system namespace, read at start with `get` on
namespaces/kube-system (the Helm chart's ClusterRole grants exactly that when state is
on). A proxy that may not read it saves and loads nothing, and says so.
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

import realcluster

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from test_warm_restart import state_parts  # noqa: E402

STATE_FILE = "pods.v1._all.state"


@realcluster.require_bin
class StateNamesTheClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        realcluster.start_plane(cls, "state-real-", class_level=True)

    def setUp(self):
        self.state_dir = tempfile.mkdtemp(prefix="kcp-state-real-")
        self.addCleanup(shutil.rmtree, self.state_dir, True)

    def start(self, who):
        return realcluster.start_proxy(self.processes, self.plane, "--cache", "pods", "--cache-on-demand=false",
                                       "--state-dir", self.state_dir, "--state-save-interval", "0", who=who)

    def test_a_state_file_names_the_cluster_by_its_kube_system_uid(self):
        uid = json.loads(self.plane.request("/api/v1/namespaces/kube-system").body)["metadata"]["uid"]
        proxy = self.start("proxy")
        self.assertEqual(proxy.stop(), 0, proxy.stderr())
        _, fields, rv, objects = state_parts(os.path.join(self.state_dir, STATE_FILE))
        self.assertEqual(fields[5:], [self.plane.url.encode(), uid.encode()])
        self.assertGreater(rv, 0)
        self.assertTrue(objects)
        # Started again, against the same cluster: warm.
        proxy = self.start("proxy")
        body = harness.http_get("127.0.0.1", proxy.port, "/metrics")[2].decode()
        warm = [line for line in body.splitlines()
                if line.startswith("kube_cache_proxy_cache_warm_start_resource_version{") and 'resource="pods"' in line]
        self.assertEqual([float(line.rsplit(" ", 1)[1]) for line in warm], [rv], body)
        self.assertNotIn("refused", proxy.stderr())

    def test_without_get_on_kube_system_nothing_is_saved_or_loaded(self):
        proxy = self.start("limited")
        self.assertEqual(proxy.stop(), 0, proxy.stderr())
        self.assertIn("cluster identity is unknown", proxy.stderr())
        self.assertIn("HTTP 403", proxy.stderr())
        self.assertFalse(os.path.exists(os.path.join(self.state_dir, STATE_FILE)))


if __name__ == "__main__":
    unittest.main()
