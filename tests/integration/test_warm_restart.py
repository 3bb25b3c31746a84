"""Warm restart (issue #7, acceptance 3): with --state-dir the proxy saves each cached
resource's state on SIGTERM and, started again, serves it at once and resumes the
upstream watch from the saved resourceVersion instead of listing; changes made while it
was down arrive through that watch. A corrupt or truncated state file, or a saved RV the
upstream has compacted away (410 Expired, contract R8/W5), ends in a clean relist.
"""
import hashlib
import json
import os
import stat
import shutil
import struct
import tempfile
import unittest

import clients
import harness
from test_informers import metrics

STATE_FILE = "pods.v1._all.state"


def state_parts(path):
    """A state file cut into (header fields, rv, objects, seal), whatever its version: 5
    header strings in version 2, 7 (the upstream's server and cluster) from version 3."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"KCPSTATE", data[:8]
    (version,) = struct.unpack_from("<I", data, 8)
    at, fields = 12, []
    for _ in range(5 if version == 2 else 7):
        (length,) = struct.unpack_from("<I", data, at)
        fields.append(data[at + 4:at + 4 + length])
        at += 4 + length
    rv, count = struct.unpack_from("<QQ", data, at)
    at += 16
    objects = []
    for _ in range(count):
        (length,) = struct.unpack_from("<I", data, at)
        objects.append(data[at + 4:at + 4 + length])
        at += 4 + length
    return data[:12], fields, rv, objects


def forge_state(path, change):
    """What anyone who can write the state directory can do: change the objects and seal the
    file again with the bare SHA-256 that needs no key."""
    head, fields, rv, objects = state_parts(path)
    body = head + b"".join(struct.pack("<I", len(f)) + f for f in fields) + struct.pack("<QQ", rv, len(objects))
    body += b"".join(struct.pack("<I", len(o)) + o for o in map(change, objects))
    with open(path, "wb") as f:
        f.write(body + hashlib.sha256(body).digest())


def saved_rv(path):
    """The resourceVersion in a state file's header (cache/state/state_file.h)."""
    return state_parts(path)[2]


def pod_watches(base):
    return [w for w in clients.counters(base)["recentWatches"] if w["resource"] == "pods"]


class WarmRestartTest(unittest.TestCase):
    def setUp(self):
        self.processes = harness.Processes()
        self.addCleanup(self.processes.stop_all)
        self.api = clients.start_apiserver(self.processes, "--enable-control")
        self.base = "http://127.0.0.1:%d" % self.api.port
        clients.ensure_namespace(self.base, "warm")
        for i in range(20):
            status, body = clients.request(self.base + "/api/v1/namespaces/warm/pods", "POST", clients.pod("p%d" % i))
            self.assertEqual(status, 201, body)
        self.state_dir = tempfile.mkdtemp(prefix="kcp-warm-")
        self.addCleanup(shutil.rmtree, self.state_dir, True)
        self.state_file = os.path.join(self.state_dir, STATE_FILE)
        self.truth_lists = 0

    def start_proxy(self, *extra):
        proxy = self.processes.proxy(self.base, "--cache", "pods", "--cache-on-demand=false", "--state-dir",
                                     self.state_dir, "--state-save-interval", "0", *extra)
        harness.wait_for(lambda: harness.http_get(proxy.host, proxy.port, "/readyz")[0] == 200, timeout=20,
                         message="proxy ready")
        return proxy

    def proxy_pods(self, proxy):
        """key -> RV as the proxy's cache answers an RV=0 list."""
        status, headers, body = harness.http_get(proxy.host, proxy.port, "/api/v1/pods?resourceVersion=0")
        self.assertEqual(status, 200, body)
        out = {}
        for item in json.loads(body)["items"]:
            m = item["metadata"]
            out["%s/%s" % (m["namespace"], m["name"])] = m["resourceVersion"]
        return out

    def run_and_stop(self):
        proxy = self.start_proxy()
        self.assertEqual(proxy.stop(), 0, proxy.stderr())
        self.assertTrue(os.path.exists(self.state_file), proxy.stderr())
        return saved_rv(self.state_file)

    def change_while_down(self):
        status, body = clients.request(self.base + "/api/v1/namespaces/warm/pods", "POST", clients.pod("while-down"))
        self.assertEqual(status, 201, body)
        status, body = clients.request(self.base + "/api/v1/namespaces/warm/pods/p3", "DELETE")
        self.assertEqual(status, 200, body)

    def truth(self):
        """The upstream's pods; each call is one LIST the counters see, counted in self.truth_lists."""
        self.truth_lists += 1
        return clients.truth(self.base)

    def wait_equal_to_upstream(self, proxy):
        harness.wait_for(lambda: self.proxy_pods(proxy) == self.truth(), timeout=20, interval=0.05,
                         message="proxy cache equals the upstream")

    def test_restart_resumes_the_watch_from_the_saved_rv_without_a_list(self):
        rv = self.run_and_stop()
        self.assertGreater(rv, 0)
        self.change_while_down()
        before = clients.counters(self.base)
        # LISTs of pods by anyone but this test's truth() calls.
        lists_before = before["requests"].get("list pods", 0) - self.truth_lists
        watches_before = len(pod_watches(self.base))

        proxy = self.start_proxy()
        self.wait_equal_to_upstream(proxy)
        after = clients.counters(self.base)
        self.assertEqual(after["requests"].get("list pods", 0) - self.truth_lists, lists_before,
                         "no LIST of pods after a warm start")
        new_watches = pod_watches(self.base)[watches_before:]
        self.assertTrue(new_watches, "the proxy watches pods")
        # The first watch resumes from the saved RV (W5); none asks for initial events (no watch-list relist, W9).
        self.assertEqual(new_watches[0]["resourceVersion"], str(rv))
        self.assertEqual([w for w in new_watches if w["sendInitialEvents"] == "true"], [])
        self.assertIn("while-down", " ".join(self.proxy_pods(proxy)))
        m = metrics(proxy)
        self.assertEqual(m[("kube_cache_proxy_cache_warm_start_resource_version", "pods")], rv)
        self.assertEqual(m[("kube_cache_proxy_cache_relists_total", "pods")], 0)
        self.assertEqual(m[("kube_cache_proxy_cache_state_load_failures_total", "pods")], 0)

    def test_corrupt_or_truncated_state_relists_cleanly(self):
        def flip(data):
            middle = len(data) // 2
            return data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + 8]) + data[middle + 8:]

        for name, corrupt in (("flipped bytes", flip), ("truncated", lambda data: data[:len(data) * 2 // 3])):
            with self.subTest(name):
                self.run_and_stop()
                with open(self.state_file, "rb") as f:
                    data = f.read()
                with open(self.state_file, "wb") as f:
                    f.write(corrupt(data))
                self.change_while_down()
                status, body = clients.request(self.base + "/api/v1/namespaces/warm/pods", "POST",
                                               clients.pod("undo-" + name.replace(" ", "-")))
                self.assertEqual(status, 201, body)
                watches_before = len(pod_watches(self.base))

                proxy = self.start_proxy()
                self.wait_equal_to_upstream(proxy)
                m = metrics(proxy)
                self.assertEqual(m[("kube_cache_proxy_cache_state_load_failures_total", "pods")], 1)
                self.assertEqual(m[("kube_cache_proxy_cache_warm_start_resource_version", "pods")], 0)
                self.assertEqual(m[("kube_cache_proxy_cache_relists_total", "pods")], 1)
                self.assertIn("refused", proxy.stderr())
                # The relist is a fresh full state (watch-list, W9), never a resume.
                new_watches = pod_watches(self.base)[watches_before:]
                self.assertEqual(new_watches[0]["sendInitialEvents"], "true", new_watches)
                self.assertEqual(proxy.stop(), 0)
                # Recreate p3 so the next round's change_while_down can delete it again.
                status, body = clients.request(self.base + "/api/v1/namespaces/warm/pods", "POST", clients.pod("p3"))
                self.assertEqual(status, 201, body)
                status, body = clients.request(self.base + "/api/v1/namespaces/warm/pods/while-down", "DELETE")
                self.assertEqual(status, 200, body)

    def test_state_saved_before_strip_managed_fields_was_turned_on_relists(self):
        # The saved objects still carry managedFields: serving them would ignore the new
        # setting until each object changed. The file's identity names the transform.
        pod = clients.pod("with-managed-fields")
        pod["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                             "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}]
        status, body = clients.request(self.base + "/api/v1/namespaces/warm/pods", "POST", pod)
        self.assertEqual(status, 201, body)
        self.run_and_stop()
        config_dir = tempfile.mkdtemp(prefix="kcp-warm-config-")
        self.addCleanup(shutil.rmtree, config_dir, True)
        config = os.path.join(config_dir, "proxy.yaml")
        with open(config, "w") as f:
            f.write("resources:\n  - resource: pods\n    strip-managed-fields: true\n")
        proxy = self.start_proxy("--config", config)
        self.wait_equal_to_upstream(proxy)
        m = metrics(proxy)
        self.assertEqual(m[("kube_cache_proxy_cache_state_load_failures_total", "pods")], 1)
        self.assertEqual(m[("kube_cache_proxy_cache_relists_total", "pods")], 1)
        self.assertIn("strip-managed-fields", proxy.stderr())
        self.assertIn(b"managedFields", clients.request(self.base + "/api/v1/namespaces/warm/pods")[1])
        status, _, body = harness.http_get(proxy.host, proxy.port, "/api/v1/namespaces/warm/pods?resourceVersion=0")
        self.assertEqual(status, 200, body)
        self.assertNotIn(b"managedFields", body)
        # Saved again on stop, now under the new identity: the next start is warm.
        self.assertEqual(proxy.stop(), 0, proxy.stderr())
        proxy = self.start_proxy("--config", config)
        self.wait_equal_to_upstream(proxy)
        m = metrics(proxy)
        self.assertEqual(m[("kube_cache_proxy_cache_state_load_failures_total", "pods")], 0)
        self.assertEqual(m[("kube_cache_proxy_cache_relists_total", "pods")], 0)

    def test_saved_rv_compacted_away_relists(self):
        self.run_and_stop()
        self.change_while_down()
        clients.request(self.base + "/control/compact", "POST", b"")
        proxy = self.start_proxy()
        self.wait_equal_to_upstream(proxy)
        m = metrics(proxy)
        self.assertEqual(m[("kube_cache_proxy_cache_relists_total", "pods")], 1)
        self.assertEqual(m[("kube_cache_proxy_cache_state_load_failures_total", "pods")], 0)

    def test_finding_state_file_from_another_upstream_is_refused(self):
        """Issue 36, finding 2: a state file named its resource, not its cluster. Another
        cluster behind the same address (a cluster rebuilt, a state directory moved) had its
        objects served as current, and the resumed watch replayed one cluster's events over
        the other's objects."""
        self.run_and_stop()
        port = self.api.port
        self.api.stop()
        other = self.processes.start([clients.APISERVER_BIN, "--listen", "127.0.0.1:%d" % port, "--enable-control"])
        clients.ensure_namespace(self.base, "warm")
        # More writes than the first cluster had: the saved RV is within this one's history.
        for i in range(40):
            status, body = clients.request(self.base + "/api/v1/namespaces/warm/pods", "POST", clients.pod("b%d" % i))
            self.assertEqual(status, 201, body)
        proxy = self.start_proxy()
        try:
            self.wait_equal_to_upstream(proxy)
        finally:
            served, truth = self.proxy_pods(proxy), self.truth()
            print("finding 2: %d of the %d pods the cache serves are the other cluster's (the upstream has %d)"
                  % (len(set(served) - set(truth)), len(served), len(truth)))
        self.assertNotIn("warm/p0", self.proxy_pods(proxy))
        status, _, body = harness.http_get(proxy.host, proxy.port, "/api/v1/namespaces/warm/pods")
        self.assertEqual(status, 200, body)
        self.assertEqual(len(json.loads(body)["items"]), 40)
        m = metrics(proxy)
        self.assertEqual(m[("kube_cache_proxy_cache_state_load_failures_total", "pods")], 1)
        self.assertEqual(m[("kube_cache_proxy_cache_warm_start_resource_version", "pods")], 0)
        self.assertIn("wrong_upstream", proxy.stderr())
        # Saved again on stop, for this cluster: its next start is warm.
        self.assertEqual(proxy.stop(), 0, proxy.stderr())
        proxy = self.start_proxy()
        self.wait_equal_to_upstream(proxy)
        self.assertEqual(metrics(proxy)[("kube_cache_proxy_cache_state_load_failures_total", "pods")], 0)
        other.stop()

    def test_finding_state_file_integrity_is_a_bare_sha256(self):
        """Issue 36, finding 3: anyone who could write --state-dir could add objects (a SHA-256
        needs no key), a temporary file planted as a link redirected the write, and the
        directory was created 0755. With --state-key-file the seal is an HMAC; the
        temporary file is created exclusively, never through a link; the directory 0700."""
        key_file = os.path.join(self.state_dir, "..", os.path.basename(self.state_dir) + ".key")
        with open(key_file, "w") as f:
            f.write("k" * 40 + "\n")
        self.addCleanup(os.remove, key_file)
        self.state_dir = os.path.join(self.state_dir, "new")
        self.state_file = os.path.join(self.state_dir, STATE_FILE)
        victim = os.path.join(self.state_dir + "-victim")
        with open(victim, "w") as f:
            f.write("not the proxy's\n")
        self.addCleanup(os.remove, victim)
        proxy = self.start_proxy("--state-key-file", key_file)
        self.assertEqual(stat.S_IMODE(os.stat(self.state_dir).st_mode), 0o700)
        os.symlink(victim, self.state_file + ".tmp")
        self.assertEqual(proxy.stop(), 0, proxy.stderr())
        with open(victim) as f:
            self.assertEqual(f.read(), "not the proxy's\n")
        self.assertTrue(stat.S_ISREG(os.lstat(self.state_file).st_mode))

        forge_state(self.state_file, lambda o: o.replace(b'"name":"p0"', b'"name":"zz"'))
        proxy = self.start_proxy("--state-key-file", key_file)
        self.wait_equal_to_upstream(proxy)
        print("finding 3: directory %o, the planted link's target untouched, the forged pod served: %s"
              % (stat.S_IMODE(os.stat(self.state_dir).st_mode), "warm/zz" in self.proxy_pods(proxy)))
        self.assertNotIn("warm/zz", self.proxy_pods(proxy))
        m = metrics(proxy)
        self.assertEqual(m[("kube_cache_proxy_cache_state_load_failures_total", "pods")], 1)
        self.assertIn("unauthenticated", proxy.stderr())


if __name__ == "__main__":
    unittest.main()
