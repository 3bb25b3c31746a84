"""Go controllers' caches through the proxy end equal to the real apiserver's truth: a
client-go SharedInformerFactory with the watch-list protocol (client-go's default) and
without it, and a controller-runtime manager's cache, all with client-go's data-consistency
detector on (KUBE_WATCHLIST_INCONSISTENCY_DETECTOR: every watch-list sync is checked with
an Exact LIST, and a difference panics the client). Random churn runs through an apiserver
restart and an etcd compaction. Contract clauses: K1, K2, K4 (the clients), W4, W7, W9
(watch RVs, bookmarks, watch-list), R3 and R7 (the detector's Exact LIST at an RV that
another resource's write may have made), C1.
"""
import http.client
import json
import os
import random
import subprocess
import tempfile
import unittest

import realcluster

import clients
import harness

CLIENTS = [("client-go watch-list", "client-go", {}),
           ("client-go list+watch", "client-go", {"KUBE_FEATURE_WatchListClient": "false"}),
           ("controller-runtime", "controller-runtime", {})]


class GoInformer(clients.LineClient):
    def __init__(self, kubeconfig, kind, env):
        e = dict(os.environ, KUBE_WATCHLIST_INCONSISTENCY_DETECTOR="true", KUBE_LIST_FROM_CACHE_INCONSISTENCY_DETECTOR="true",
                 **env)
        self.stderr_file = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([realcluster.tool("informer"), "--kubeconfig", kubeconfig, "--kind", kind],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr_file, text=True,
                                     env=e)
        import queue
        import threading
        self.lines = queue.Queue()
        self.events = []
        threading.Thread(target=self._read, daemon=True).start()

    def stderr(self):
        self.stderr_file.seek(0)
        return self.stderr_file.read()


def churn(plane, namespace, count, rnd):
    """Creates, updates and deletes pods in `namespace` on the apiserver directly."""
    live = sorted(plane.truth("/api/v1/namespaces/%s/pods" % namespace))
    live = [k.split("/", 1)[1] for k in live]
    for _ in range(count):
        op = rnd.random()
        if not live or op < 0.4:
            name = "p-%d" % rnd.randrange(1 << 30)
            a = plane.request("/api/v1/namespaces/%s/pods" % namespace, "POST", clients.pod(name))
            assert a.status == 201, a.body
            live.append(name)
        elif op < 0.8:
            name = rnd.choice(live)
            a = plane.request("/api/v1/namespaces/%s/pods/%s" % (namespace, name), "PATCH",
                              {"metadata": {"labels": {"rev": str(rnd.randrange(1000))}}},
                              content_type="application/merge-patch+json")
            assert a.status == 200, a.body
        else:
            name = rnd.choice(live)
            a = plane.request("/api/v1/namespaces/%s/pods/%s" % (namespace, name), "DELETE")
            assert a.status == 200, a.body
            live.remove(name)


@realcluster.require_bin
class GoInformersThroughProxyTest(unittest.TestCase):
    def setUp(self):
        realcluster.start_plane(self, "informers-real-")

    def wait_equal(self, informer, name, timeout=60):
        last = {}

        def equal():
            if informer.proc.poll() is not None:
                raise AssertionError("%s exited (%s): %s" % (name, informer.proc.returncode,
                                                            informer.stderr()[-3000:]))
            last["want"], last["got"] = self.plane.truth(), informer.dump()
            return last["want"] == last["got"]
        try:
            harness.wait_for(equal, timeout=timeout, interval=0.3, message="%s == truth" % name)
        except AssertionError:
            want, got = last.get("want", {}), last.get("got", {})
            diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
            raise AssertionError("%s differs from the apiserver on %d keys, e.g. %s" % (name, len(diff),
                                                                                      list(diff.items())[:5]))

    def test_go_informers_end_equal_to_the_truth_through_restart_and_compaction(self):
        seed = int(os.environ.get("KCP_INFORMER_SEED", random.randrange(1 << 30)))
        print("seed %d" % seed)
        rnd = random.Random(seed)
        self.assertEqual(self.plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": "churn"}}).status, 201)
        # --gzip-loopback: client-go's transport asks for gzip, and its watch-lists come
        # gzip'd as kube-apiserver 1.37 sends them (W9), one member per flush.
        proxy = realcluster.start_proxy(self.processes, self.plane, "--cache", "pods", "--gzip-loopback")
        kubeconfig = realcluster.proxy_kubeconfig(self.workdir, proxy.port)
        informers = []
        for name, kind, env in CLIENTS:
            inf = GoInformer(kubeconfig, kind, env)
            self.addCleanup(inf.stop)
            informers.append((name, inf))
        for name, inf in informers:
            inf.wait_event(lambda e: e.get("event") == "synced", timeout=60)
        churn(self.plane, "churn", 60, rnd)
        for name, inf in informers:
            self.wait_equal(inf, name)

        # A restart of the apiserver breaks every watch (the proxy's too); a compaction
        # removes the history older resumes would need.
        self.plane.restart_apiserver()
        churn(self.plane, "churn", 40, rnd)
        self.plane.compact()
        churn(self.plane, "churn", 40, rnd)
        for name, inf in informers:
            self.wait_equal(inf, name)
        for name, inf in informers:
            self.assertIsNone(inf.proc.poll(), "%s exited: the consistency detector fired?" % name)
            self.assertNotIn("inconsistency", inf.stderr())

    def test_idle_resources_are_served_from_memory_while_the_cluster_churns(self):
        """Issue 15 against kube-apiserver: with Leases and Events churning, watch-list
        informers (detector on) over idle resources sync through the proxy without a watch
        of their own at the apiserver, and reads at another resource's RV, consistent reads
        and RV-unset watches of an idle resource are answered from memory (C1, R3, W4, W9)."""
        idle = ["configmaps", "secrets", "services", "serviceaccounts", "limitranges"]
        self.plane.churn(nodes=20, events=2, interval="2s")
        self.addCleanup(self.plane.stop_churn)
        proxy = realcluster.start_proxy(self.processes, self.plane, "--cache", ",".join(idle), "--cache-on-demand=false")
        kubeconfig = realcluster.proxy_kubeconfig(self.workdir, proxy.port)

        def watches():
            total = 0.0
            for line in self.plane.request("/metrics").body.decode().splitlines():
                if line.startswith("apiserver_longrunning_requests{") and 'verb="WATCH"' in line and \
                        any('resource="%s"' % r in line for r in idle):
                    total += float(line.rsplit(" ", 1)[1])
            return total
        before = watches()
        env = dict(os.environ, KUBE_WATCHLIST_INCONSISTENCY_DETECTOR="true")
        procs = [subprocess.Popen([realcluster.tool("informer"), "--kubeconfig", kubeconfig, "--resources", ",".join(idle)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  env=env) for _ in range(5)]
        def stop(p):
            p.kill()
            p.wait()
            p.stdin.close()
            p.stdout.close()
        for p in procs:
            self.addCleanup(stop, p)
        for p in procs:
            line = p.stdout.readline()
            self.assertIn('"synced"', line, "an informer did not sync through the proxy")
        self.assertLessEqual(watches() - before, 0, "informers' watches reached the apiserver")

        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        self.addCleanup(conn.close)
        for _ in range(5):
            rv = self.plane.request("/api/v1/namespaces/default/secrets", "POST",
                                    {"metadata": {"generateName": "s-"}}).json()["metadata"]["resourceVersion"]
            for path in ("/api/v1/namespaces/default/configmaps?resourceVersion=" + rv,
                         "/api/v1/namespaces/default/configmaps"):
                conn.request("GET", path, headers={"Accept": "application/json"})
                r = conn.getresponse()
                body = r.read()
                self.assertEqual(r.status, 200, body[:300])
                self.assertTrue((r.getheader("X-Kube-Cache-Proxy") or "").startswith("cache"), path)
                self.assertGreaterEqual(int(json.loads(body)["metadata"]["resourceVersion"]), int(rv))
        for p in procs:
            self.assertIsNone(p.poll(), "an informer exited: the consistency detector fired?")


if __name__ == "__main__":
    unittest.main()
