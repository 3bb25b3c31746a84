"""kube-apiserver's protobuf answers, read and written again by the proxy's protobuf code
(cache/protobuf_list.h, cache/protobuf_object.h), come out byte for byte as the apiserver
wrote them: LISTs of several built-in resources (contract N2: the k8s\\0 envelope, ListMeta,
items) and watch streams (W2: length-prefixed WatchEvent envelopes around enveloped
objects), with the keys and RVs the JSON answers give. Issue 18: the ground the protobuf
serving will stand on.
"""
import json
import os
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


if __name__ == "__main__":
    unittest.main()
