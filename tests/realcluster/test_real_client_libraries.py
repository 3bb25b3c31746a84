"""Client libraries' informers against kube-apiserver 1.37.2, directly and through a sidecar
proxy (plain HTTP on 127.0.0.1, the proxy's own credentials):

- kube-rs 5.0 (Rust, tests/clients/rust): a reflector over watcher() with watcher::Config's
  defaults (LIST, then WATCH from its resourceVersion, bookmarks on) and with
  streaming_lists() (the watch-list: one WATCH with sendInitialEvents=true);
- the official Kubernetes Java client 27.0 (tests/clients/client-java): SharedInformerFactory
  informers as its example makes them (no bookmarks), and with allowWatchBookmarks=true.

Per library, its four clients (two modes, direct and through the proxy) run at once over
ConfigMaps and Pods of one namespace through one story, and each must equal the apiserver's
truth after every step: synced; creates, updates and deletes (each shown within 1 s of its
request); writes around an etcd compaction; a client-side outage (SIGSTOP across writes and a
compaction, then SIGCONT); an apiserver restart after a compaction that leaves every client's
position compacted (direct clients then resume into a 410 and relist). No resourceVersion a
client reports goes back: per object, and the resourceVersions it lists and resumes watches
from (its last event's or bookmark's). SIGTERM ends each with exit 0.

What each library sends is recorded over TLS (recorder.py) and printed for
docs/compatibility.md. Contract clauses: K1 (clients), W1, W4, W7, W9 (watch, resumes,
bookmarks, watch-list), R1 (LIST).
"""
import os
import signal
import tempfile
import time
import unittest

import realcluster
from recorder import Recorder, lower_keys, query

import clients
import harness

LATENCY = 1.0       # seconds from a write's request to every client showing it
SETTLE = 90         # seconds for every client to equal the truth after a step (the restart's backoffs)
RESOURCES = ("configmaps", "pods")

# Per library: its build folder under tests/clients, its command line, its modes (name: flags)
# and the names its event lines give to a watch event's types.
LIBRARIES = {
    "kube-rs": {
        "build": "rust",
        "argv": lambda folder: [os.path.join(folder, "kube-rs-informer")],
        "modes": {"default": [], "streaming_lists": ["--streaming-lists"]},
        "events": {"ADDED": "Apply", "MODIFIED": "Apply", "DELETED": "Delete"},
    },
    "client-java": {
        "build": "client-java",
        "argv": lambda folder: ["java", *realcluster.JVM_FLAGS, "-jar", os.path.join(folder, "client-java-informer.jar")],
        "modes": {"no bookmarks": [], "bookmarks": ["--bookmarks"]},
        "events": {"ADDED": "ADD", "MODIFIED": "UPDATE", "DELETED": "DELETE"},
    },
}
# (library, mode) -> why its through-proxy variant does not run (a difference of the proxy's).
PROXY_DIFFERENCES = {}


class LibraryClient(realcluster.LineProcess):
    def __init__(self, name, argv):
        self.name = name
        super().__init__(argv)

    def watch_positions(self):
        """Checks that no resourceVersion this client reported goes back: each object's across its
        events, and per resource the resourceVersion of each LIST and WATCH it sends against the
        newest it had seen (event or resumed-from)."""
        self._drain()
        per_object, position = {}, {}
        for e in self.events:
            if e.get("rv"):
                rv, resource = int(e["rv"]), e["resource"]
                last = per_object.get((resource, e["key"]))
                if last is not None and rv < last:
                    raise AssertionError("%s: %s %s went back from %d to %d (%s)" % (
                        self.name, resource, e["key"], last, rv, e["event"]))
                per_object[(resource, e["key"])] = rv
                position[resource] = max(position.get(resource, 0), rv)
            elif "request" in e:
                uri = e["request"]["uri"]
                resource = uri.split("?", 1)[0].rsplit("/", 1)[-1]
                rv = query("GET " + uri).get("resourceVersion", "")
                if rv in ("", "0"):      # a consistent read, or any: not a position
                    continue
                if int(rv) < position.get(resource, 0):
                    raise AssertionError("%s: %s asks for resourceVersion %s after it had %d" % (
                        self.name, uri, rv, position[resource]))
                position[resource] = int(rv)

    def requests_of(self, resource):
        """This client's requests for `resource`, in order, in short: "LIST", "LIST@rv", "WATCH@rv",
        "WATCHLIST" (a watch-list's initial WATCH)."""
        self._drain()
        out = []
        for e in self.events:
            uri = e.get("request", {}).get("uri", "")
            if uri.split("?", 1)[0].endswith("/" + resource):
                q = query("GET " + uri)
                kind = "WATCHLIST" if q.get("sendInitialEvents") == "true" else \
                    "WATCH" if q.get("watch") == "true" else "LIST"
                rv = q.get("resourceVersion", "")
                out.append(kind + ("@" + rv if rv else ""))
        return out

    def relists(self):
        """How many times each resource was listed (the first time included): a LIST, or a
        watch-list's initial WATCH."""
        return {r: sum(1 for k in self.requests_of(r) if k.startswith(("LIST", "WATCHLIST"))) for r in RESOURCES}


@realcluster.require_bin
class ClientLibrariesTest(realcluster.NamespaceWrites, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.builds = {name: realcluster.build_client(lib["build"]) for name, lib in LIBRARIES.items()}
        realcluster.start_plane(cls, "client-libraries-", class_level=True)
        cls.proxy = realcluster.start_proxy(cls.processes, cls.plane, "--cache", "configmaps,pods")
        cls.proxy_kubeconfig = realcluster.proxy_kubeconfig(cls.workdir, cls.proxy.port)

    # -- the cluster's side ---------------------------------------------------------------

    def writes(self, namespace, prefix):
        """Creates 3 ConfigMaps, updates 2 of them and the first of the namespace's, deletes one
        of the new ones and one old one, and creates a Pod. Returns
        [(watch event type, name, resourceVersion or None for a delete, time of the request)]."""
        names = ["%s-%d" % (prefix, i) for i in range(3)]
        steps = [("ADDED", "POST", n, {"metadata": {"name": n}, "data": {"v": "1"}}) for n in names]
        steps += [("MODIFIED", "PATCH", n, {"data": {"v": "2"}}) for n in names[:2]]
        old = sorted(k.split("/", 1)[1] for k in self.truth(namespace, "configmaps"))
        old = [n for n in old if n not in names]
        if old:
            steps += [("MODIFIED", "PATCH", old[0], {"data": {"v": prefix}}), ("DELETED", "DELETE", old[-1], None)]
        steps += [("DELETED", "DELETE", names[2], None)]
        done = []
        for kind, method, name, body in steps:
            start = time.monotonic()
            rv = self.write(method, namespace, "configmaps", None if method == "POST" else name, body)
            done.append((kind, name, None if kind == "DELETED" else rv, start))
        self.write("POST", namespace, "pods", body=clients.pod("%s-pod" % prefix))
        return done

    # -- the clients' side ----------------------------------------------------------------

    def start_clients(self, library, namespace):
        """The library's clients, each mode directly and through the proxy: {variant name: client}
        (a through-proxy variant of PROXY_DIFFERENCES is left out, and reported as skipped)."""
        lib = LIBRARIES[library]
        started = {}
        for mode, flags in lib["modes"].items():
            for via, kubeconfig in (("direct", self.plane.kubeconfig()), ("through the proxy", self.proxy_kubeconfig)):
                name = "%s %s %s" % (library, mode, via)
                if via != "direct" and (library, mode) in PROXY_DIFFERENCES:
                    with self.subTest(variant=name):
                        self.skipTest(PROXY_DIFFERENCES[(library, mode)])
                    continue
                client = LibraryClient(name, lib["argv"](self.builds[library]) + [
                    "--kubeconfig", kubeconfig, "--namespace", namespace, "--resources", ",".join(RESOURCES)] + flags)
                self.addCleanup(client.stop)
                started[name] = client
        return started

    def wait_equal(self, running, namespace, step, timeout=SETTLE):
        """Waits until every client's stores equal the apiserver's truth; fails naming each client
        that does not, and how it differs."""
        late, start = {}, time.monotonic()

        def equal():
            truth = {r: self.truth(namespace, r) for r in RESOURCES}
            late.clear()
            for name, client in running.items():
                client.check_alive()
                dump = client.dump(timeout=30)
                for r in RESOURCES:
                    if dump.get(r) != truth[r]:
                        want, got = truth[r], dump.get(r) or {}
                        late[name] = {k: (want.get(k), got.get(k)) for k in set(want) | set(got)
                                      if want.get(k) != got.get(k)}
            return not late
        try:
            harness.wait_for(equal, timeout=timeout, interval=0.2, message=step)
        except AssertionError:
            raise AssertionError("%s: not equal to the apiserver's truth (key: (apiserver's RV, client's RV)): %s" % (
                step, {n: dict(list(d.items())[:4]) for n, d in late.items()}))
        print("  all equal to the truth %s (%.1f s after the step)" % (step, time.monotonic() - start))

    def shown(self, library, running, done, what):
        """Each write of `done` is shown by every client within LATENCY of its request."""
        names = LIBRARIES[library]["events"]
        latencies = {}
        for kind, name, rv, start in done:
            for cname, client in running.items():
                key = "%s/%s" % (self.ns, name)
                e = client.first(lambda e, key=key: e.get("event") == names[kind] and e.get("key") == key and
                                 e.get("resource") == "configmaps" and (rv is None or e.get("rv") == rv),
                                 10, "%s: %s %s (%s)" % (cname, kind, key, what))
                latencies.setdefault(cname, []).append(e["mono"] - start)
        for cname, lat in latencies.items():
            print("  %s: %s shown after %.3f-%.3f s" % (cname, what, min(lat), max(lat)))
            self.assertLess(max(lat), LATENCY, "%s: %s shown %.3f s after its request" % (cname, what, max(lat)))

    # -- the story ---------------------------------------------------------------------------

    def run_library(self, library):
        self.ns = self.namespace("lib-" + library)
        ns = self.ns
        running = self.start_clients(library, ns)
        for name, client in running.items():
            for r in RESOURCES:
                client.first(lambda e, r=r: e.get("event") == "synced" and e.get("resource") == r, 90,
                             "%s: %s synced" % (name, r))
        self.wait_equal(running, ns, "synced", timeout=5)

        self.shown(library, running, self.writes(ns, "churn"), "creates, updates and deletes")
        self.wait_equal(running, ns, "after the writes")

        # writes around a compaction
        done = self.writes(ns, "before-compaction")
        self.plane.compact()
        done += self.writes(ns, "after-compaction")
        self.shown(library, running, done, "writes around a compaction")
        self.wait_equal(running, ns, "after a compaction")

        # a client-side outage across writes and a compaction
        for client in running.values():
            client.proc.send_signal(signal.SIGSTOP)
        try:
            self.writes(ns, "outage")
            self.plane.compact()
            self.writes(ns, "outage-late")
        finally:
            for client in running.values():
                client.proc.send_signal(signal.SIGCONT)
        self.wait_equal(running, ns, "after a client-side outage across a compaction")

        # An apiserver restart after a write elsewhere and a compaction: every client's position
        # (its newest resourceVersion of this namespace) is compacted, so a direct client's
        # resumed watch gets 410 and relists.
        self.namespace("lib-%s-elsewhere" % library, configmaps=1, pods=0)
        self.plane.compact()
        before = {name: client.relists() for name, client in running.items()}
        self.plane.restart_apiserver()
        self.writes(ns, "restarted")
        self.wait_equal(running, ns, "after an apiserver restart, every position compacted")

        for name, client in running.items():
            with self.subTest(variant=name):
                client.watch_positions()
                after = client.relists()
                print("  %s: ConfigMap requests %s; errors: %s" % (
                    name, " ".join(client.requests_of("configmaps")),
                    [e["message"][:120] for e in client.events if e.get("event") == "error"][:4]))
                if name.endswith("direct"):
                    for r in RESOURCES:
                        self.assertGreater(after.get(r, 0), before[name].get(r, 0),
                                           "%s relisted %s after the restart (its position was compacted)" % (name, r))
                self.assertEqual(client.terminate(), 0, "%s: exit code on SIGTERM; stderr: %s" % (
                    name, client.stderr()[-2000:]))
                client._drain()
                self.assertTrue(any(e.get("event") == "stopped" for e in client.events), name)

    def test_kube_rs(self):
        self.run_library("kube-rs")

    def test_client_java(self):
        self.run_library("client-java")

    # -- what each sends ------------------------------------------------------------------------

    def record(self, library):
        """Runs each mode of `library` against a recording TLS relay in front of the apiserver
        until it has synced and shown one event; returns {mode: (requests, responses)} and prints
        them."""
        pki = harness.make_pki(tempfile.mkdtemp(dir=self.workdir))
        recorder = Recorder(self.plane, pki)
        self.addCleanup(recorder.close)
        kubeconfig = os.path.join(self.workdir, "recorder-%s.kubeconfig" % library)
        with open(kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: r\n  cluster:\n    server: https://127.0.0.1:%d\n"
                    "    certificate-authority: %s\nusers:\n- name: u\n  user:\n    token: %s\ncontexts:\n- name: r\n"
                    "  context:\n    cluster: r\n    user: u\ncurrent-context: r\n"
                    % (recorder.port, pki["ca"], realcluster.TOKENS["admin"]))
        ns = self.namespace("rec-" + library, configmaps=1, pods=0)
        lib = LIBRARIES[library]
        out = {}
        for mode, flags in lib["modes"].items():
            del recorder.requests[:], recorder.responses[:]
            client = LibraryClient("%s %s" % (library, mode), lib["argv"](self.builds[library]) + [
                "--kubeconfig", kubeconfig, "--namespace", ns] + flags)
            self.addCleanup(client.stop)
            client.first(lambda e: e.get("event") == "synced", 60, "%s %s synced through the recorder" % (library, mode))
            rv = self.write("POST", ns, "configmaps", body={"metadata": {"generateName": "rec-"}})
            client.first(lambda e: e.get("event") == lib["events"]["ADDED"] and e.get("rv") == rv, 10,
                         "an event through the recorder")
            self.assertEqual(client.terminate(), 0)
            print("%s %s sends:" % (library, mode))
            for r in recorder.requests:
                print("  [ALPN %s] %s %s" % (r["alpn"], r["line"], sorted(r["headers"].items())))
            for r in recorder.responses:
                print("  answered: %s %s" % (r["line"], sorted(r["headers"].items())))
            out[mode] = (list(recorder.requests), list(recorder.responses))
        return ns, out

    @staticmethod
    def split(requests):
        lists = [r for r in requests if "/configmaps" in r["line"] and query(r["line"]).get("watch") != "true"]
        watches = [r for r in requests if query(r["line"]).get("watch") == "true"]
        return lists, watches

    def test_kube_rs_what_it_sends(self):
        """kube-rs over TLS: HTTP/1.1 (no ALPN offered); with the defaults a LIST with limit=500
        and no resourceVersion (a consistent read, paged), then a WATCH from its resourceVersion
        with timeoutSeconds=290 and bookmarks; with streaming_lists no LIST, and a WATCH with
        sendInitialEvents=true, resourceVersionMatch=NotOlderThan, resourceVersion=0."""
        ns, records = self.record("kube-rs")
        for mode, (requests, _) in records.items():
            with self.subTest(mode=mode):
                self.assertTrue(all(r["alpn"] is None for r in requests), requests)
                lists, watches = self.split(requests)
                self.assertTrue(watches, requests)
                if mode == "streaming_lists":
                    self.assertEqual(lists, [])
                    self.assertEqual(query(watches[0]["line"]), {
                        "watch": "true", "timeoutSeconds": "290", "allowWatchBookmarks": "true",
                        "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan", "resourceVersion": "0"})
                else:
                    self.assertEqual([query(r["line"]) for r in lists], [{"limit": "500"}])
                    q = query(watches[0]["line"])
                    self.assertEqual(set(q), {"watch", "timeoutSeconds", "allowWatchBookmarks", "resourceVersion"})
                    self.assertEqual((q["timeoutSeconds"], q["allowWatchBookmarks"]), ("290", "true"))
                for r in lists + watches:
                    h = lower_keys(r["headers"])
                    self.assertTrue(r["line"].startswith("GET /api/v1/namespaces/%s/configmaps?" % ns), r["line"])
                    self.assertEqual(h.get("authorization"), "Bearer <token>")
                    self.assertNotIn("upgrade", h)

    def test_client_java_what_it_sends(self):
        """client-java over TLS: HTTP/2 (ALPN h2); the informer's LIST at resourceVersion=0 with
        watch=false, then a WATCH from its resourceVersion with a random timeoutSeconds of 300-600;
        allowWatchBookmarks=true on both only when the application asks for it."""
        ns, records = self.record("client-java")
        for mode, (requests, _) in records.items():
            with self.subTest(mode=mode):
                self.assertTrue(requests, "nothing recorded")
                self.assertTrue(all(r["alpn"] == "h2" for r in requests), requests)
                lists, watches = self.split(requests)
                self.assertTrue(lists and watches, requests)
                bookmarks = {"allowWatchBookmarks": "true"} if mode == "bookmarks" else {}
                self.assertEqual(query(lists[0]["line"]), dict(resourceVersion="0", watch="false", **bookmarks))
                q = query(watches[0]["line"])
                self.assertEqual(set(q), {"watch", "timeoutSeconds", "resourceVersion"} | set(bookmarks))
                self.assertTrue(300 <= int(q["timeoutSeconds"]) <= 600, q)
                for r in lists + watches:
                    h = lower_keys(r["headers"])
                    self.assertTrue(r["line"].startswith("GET /api/v1/namespaces/%s/configmaps?" % ns), r["line"])
                    self.assertEqual(h.get("authorization"), "Bearer <token>")


if __name__ == "__main__":
    unittest.main()
