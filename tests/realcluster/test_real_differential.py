"""The differential read test against the real kube-apiserver: generated GET and LIST
requests over every RV rule, selectors, pagination and continue tokens, Table,
PartialObjectMetadata and malformed parameters, sent to the proxy and to the apiserver
directly while pods, configmaps, secrets, leases and events churn; an etcd compaction at
85 %. Besides the fast tier's types it reads secrets, services, endpointslices, leases,
events and replicasets (real_resources.py), all cached. Answers must be
byte-equal (contract R1-R8, P1-P7, S1-S7, N1-N4, C1; see tests/integration/
test_read_differential.py for how answers taken at the server's RV of choice are checked).

  KCP_REAL_DIFF_REQUESTS=N  requests (default 10000)
  KCP_DIFF_ENCODING=protobuf  only protobuf Accept headers (issue 18; docs/benchmarks.md)
  KCP_DIFF_SEED=N           replay one sequence (CTest pins one; by hand, leave it unset to
                            explore new sequences)
"""
import concurrent.futures
import os
import random
import threading
import unittest

import realcluster

import harness
import read_requests
import real_resources
import test_read_differential as differential

CACHED = ("pods,configmaps,widgets.example.com,secrets,services,endpointslices.discovery.k8s.io,"
          "leases.coordination.k8s.io,events,replicasets.apps,nodes,deployments.apps")
RESOURCES = read_requests.RESOURCES + real_resources.REAL_EXTRA_RESOURCES


def realistic_pod(ns, name, node, i):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"app": "app-%d" % (i % 50), "tier": ["backend", "frontend"][i % 2],
                                    "team": "team-%d" % (i % 7), "version": "v1.%d" % (i % 13),
                                    "pod-template-hash": "5d8f%d" % (1000 + i % 9000)}},
            "spec": {"nodeName": node, "restartPolicy": ["Always", "Never"][i % 5 == 0],
                     "containers": [{"name": "main", "image": "registry.example.com/app-%d:1.2.3" % (i % 50)}]}}


def load(plane, count_per_kind=(300, 120, 90), namespaces=6, nodes=5):
    """The bulk data the test apiserver's /control/load creates, through the API."""
    plane.churn(nodes=nodes, interval="1h")  # the fake nodes, no lease churn
    for n in range(namespaces):
        a = plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": "load-%d" % n}})
        assert a.status in (201, 409), a.body
    pods, cms, widgets = count_per_kind
    jobs = []
    for i in range(pods):
        ns = "load-%d" % (i % namespaces)
        jobs.append(("/api/v1/namespaces/%s/pods" % ns, realistic_pod(ns, "pod-%d" % i, "fake-node-%d" % (i % nodes), i)))
    for i in range(cms):
        ns = "load-%d" % (i % namespaces)
        jobs.append(("/api/v1/namespaces/%s/configmaps" % ns, {"metadata": {"name": "cm-%d" % i,
                     "labels": {"app": "app-%d" % (i % 50)}}, "data": {"k": str(i)}}))
    for i in range(widgets):
        ns = "load-%d" % (i % namespaces)
        jobs.append(("/apis/example.com/v1/namespaces/%s/widgets" % ns, {
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "widget-%d" % i, "labels": {"app": "app-%d" % (i % 50)}},
            "spec": {"color": ["red", "blue"][i % 2], "size": i % 10}}))
    jobs += real_resources.load_jobs(namespaces, nodes)

    def create(job):
        a = plane.request(job[0], "POST", job[1])
        assert a.status == 201, a.body
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(create, jobs))


CHURN_KINDS = ["pods", "configmaps", "secrets", "leases", "events"]


def churn_body(kind, name, n):
    """A new object `name` of `kind` in namespace churn."""
    if kind == "pods":
        return realistic_pod("churn", name, "fake-node-0", n)
    if kind == "configmaps":
        return {"metadata": {"name": name, "labels": {"app": "app-1"}}, "data": {"k": "v"}}
    if kind == "secrets":
        return real_resources.secret("churn", name, n)
    if kind == "leases":
        return real_resources.lease("churn", name, n)
    body = real_resources.event("churn", n - (n % 4 == 3), name)  # about a pod, not a Node
    body["involvedObject"].update(namespace="churn", name=name)
    body["metadata"]["namespace"] = "churn"
    return body


class Churn:
    """Creates, updates and deletes pods, configmaps, secrets, leases and events churn-0..49
    in namespace churn; a lease update renews it, as its holder does."""

    def __init__(self, plane, rate=20.0):
        self.plane, self.period = plane, 1.0 / rate
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        rnd = random.Random(7)
        while not self.stop_event.wait(self.period):
            kind = rnd.choice(CHURN_KINDS)
            name = "churn-%d" % rnd.randrange(50)
            base = (real_resources.PATHS.get(kind) or "/api/v1/namespaces/%s/" + kind) % "churn"
            op = rnd.random()
            if op < 0.45:
                self.plane.request(base, "POST", churn_body(kind, name, rnd.randrange(100)))
            elif op < 0.8:
                patch = {"spec": {"renewTime": real_resources.MICRO % (rnd.randrange(60), rnd.randrange(60),
                                                                       rnd.randrange(10 ** 6))}} \
                    if kind == "leases" else {"metadata": {"labels": {"rev": str(rnd.random())}}}
                self.plane.request("%s/%s" % (base, name), "PATCH", patch, content_type="application/merge-patch+json")
            else:
                self.plane.request("%s/%s" % (base, name), "DELETE")

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        self.thread.join()


def build_universe(plane):
    names, namespaces = {}, set()
    for res in RESOURCES:
        a = plane.request(res.collection())
        assert a.status == 200, a.body
        names[res.plural] = [((i["metadata"].get("namespace") or ""), i["metadata"]["name"]) for i in a.json()["items"]]
        namespaces.update(ns for ns, _ in names[res.plural] if ns.startswith("load-"))
    nodes = sorted(n for _, n in names["nodes"])
    for kind in CHURN_KINDS:
        names[kind] += [("churn", "churn-%d" % i) for i in range(50)]
    rv = plane.request("/api/v1/namespaces/default/pods?limit=1").json()["metadata"]["resourceVersion"]
    return read_requests.Universe(sorted(namespaces) + ["default", "demo"], names, nodes, rv, RESOURCES)


@realcluster.require_bin
class RealDifferentialTest(unittest.TestCase):
    def setUp(self):
        realcluster.start_plane(self, "differential-real-")

    def test_proxy_answers_reads_like_the_real_apiserver_under_churn(self):
        total = int(os.environ.get("KCP_REAL_DIFF_REQUESTS", "10000"))
        seed = int(os.environ.get("KCP_DIFF_SEED", random.randrange(1 << 30)))
        print("differential read test against kube-apiserver: seed %d, %d requests" % (seed, total))
        self.assertEqual(self.plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": "churn"}}).status, 201)
        load(self.plane)
        universe = build_universe(self.plane)
        # Protobuf caches start on the first protobuf read; waiting for their sync answers
        # from them rather than passing the first requests through.
        wait = ["--cache-start-wait", "5s"] if os.environ.get("KCP_DIFF_ENCODING") == "protobuf" else []
        # --gzip-loopback: compress as the apiserver does (N1), which loopback clients of a
        # sidecar otherwise do without.
        px = realcluster.start_proxy(self.processes, self.plane, "--cache", CACHED, "--gzip-loopback", *wait)
        plane = self.plane

        def new_run():
            upstream = differential.Connection(plane.port, connect=plane.connection,
                                               headers={"Authorization": "Bearer admin-token"})
            return differential.DifferentialRun(seed, px.port, plane.port, universe, upstream=upstream)
        with Churn(plane):
            differential.drive(self, seed, total, universe, new_run, plane.compact)


if __name__ == "__main__":
    unittest.main()
