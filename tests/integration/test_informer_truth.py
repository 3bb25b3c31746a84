"""The reflector and the store, wired as in the proxy, converge to the upstream's exact
state under churn, dropped watches, compaction (410, K2/R8) and an outage, relisting only
for the faults that require it.

informer-check runs one Reflector (HttpListerWatcher -> StoreAdapter -> ThreadSafeStore)
against the test apiserver and answers "dump" with key -> resourceVersion.
"""
import json
import os
import threading
import time
import unittest

import clients
import harness

INFORMER_CHECK_BIN = os.path.join(harness.BIN_DIR, "informer-check")


class InformerCheck(clients.LineClient):
    """informer-check: JSON lines like every LineClient, plus a plain "synced" line."""

    def __init__(self, upstream_url, *args, path="/api/v1/pods"):
        self.synced = threading.Event()
        self.log = []
        super().__init__([INFORMER_CHECK_BIN, "--upstream", upstream_url, "--path", path, *args], harness.HERE)
        # Reflector logs go to stderr; drained so a chatty run never blocks on a full pipe.
        threading.Thread(target=self._read_log, daemon=True).start()

    def _read_log(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def stop(self):
        super().stop()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                pipe.close()
            except (OSError, ValueError):
                pass

    def _read(self):
        for line in self.proc.stdout:
            if line.strip() == "synced":
                self.synced.set()
                continue
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                pass

    def dump_full(self, timeout=10):
        """The whole dump answer: {"dump": {...}, "rv": "...", "relists": N, "last_sync_rv": "..."}."""
        return self.command("dump", timeout)

    def command(self, text, timeout=30):
        """Sends one command line; returns its JSON answer (every answer carries "rv")."""
        self._drain()
        before = len(self.events)
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

        def got():
            self._drain()
            return next((e for e in self.events[before:] if "rv" in e), None)
        return harness.wait_for(got, timeout=timeout, interval=0.01, message="answer to " + text)


class InformerTruthTest(unittest.TestCase):
    def setUp(self):
        self.processes = harness.Processes()
        self.addCleanup(self.processes.stop_all)

    def test_cache_equals_upstream_after_faults_with_watch_list_sync(self):
        self.check_convergence()

    def test_cache_equals_upstream_after_faults_with_paged_list_sync(self):
        self.check_convergence("--no-watch-list")

    def check_convergence(self, *informer_args):
        api = clients.start_apiserver(self.processes, "--enable-control", "--bookmark-interval", "1",
                                      "--history-size", "200")
        base = "http://127.0.0.1:%d" % api.port
        clients.ensure_namespace(base, "churn")
        truth_lists = [0]

        def truth():
            truth_lists[0] += 1
            return clients.truth(base)
        # Some state before the first list, so the initial sync is not empty.
        clients.control(base, "/control/churn?rate=200&seconds=1")
        harness.wait_for(lambda: len(truth()) >= 20, timeout=10, interval=0.05, message="first pods")

        # A 2 s backoff cap: five faults in a row would otherwise grow client-go's backoff to
        # 13-26 s (K1.6, covered by the reflector's unit tests) and this test would time it.
        informer = InformerCheck(base, "--backoff-cap-ms", "2000", *informer_args)
        self.addCleanup(informer.stop)
        if not informer.synced.wait(20):
            self.fail("informer-check did not sync; log:\n" + "".join(informer.log[-20:]))
        rv_before = int(clients.counters(base)["resourceVersion"])
        try:
            self.fault_and_converge(base, informer, truth, truth_lists, rv_before, informer_args)
        except AssertionError as e:
            raise AssertionError("%s\ninformer-check log:\n%s" % (e, "".join(informer.log[-40:]))) from None

    def fault_and_converge(self, base, informer, truth, truth_lists, rv_before, informer_args):

        def watching():
            return clients.counters(base)["openWatches"].get("pods", 0) > 0

        started = time.monotonic()
        clients.control(base, "/control/churn?rate=300&seconds=4")
        # Watches dropped mid-churn resume from the last RV without a relist (W6).
        for _ in range(3):
            clients.control(base, "/control/drop-watches")
            harness.wait_for(watching, timeout=20, interval=0.02, message="watch re-established")
            # The next drop waits for an event on the new watch: a watch that ends with none
            # is "very short" to the reflector, which backs off as client-go does (K1.6), and
            # at 300 changes/s a back-off of a second outlives the 200-event window: a
            # relist the faults themselves do not force.
            rv = informer.dump_full()["rv"]
            harness.wait_for(lambda: informer.dump_full()["rv"] != rv, timeout=10, interval=0.02,
                             message="an event on the new watch")
        # Compaction, then a drop: the re-watch from the old RV gets 410 and must relist (K2, R8).
        clients.control(base, "/control/compact")
        clients.control(base, "/control/drop-watches")
        harness.wait_for(watching, timeout=20, interval=0.02, message="watch re-established after compaction")
        # An outage: connections refused for 2 s while churn goes on.
        clients.control(base, "/control/refuse?seconds=2")

        # The upstream settles: the churn is over and it answers again (RV unchanged for 0.5 s).
        seen = {"rv": None, "since": 0.0}

        def upstream_settled():
            try:
                rv = clients.counters(base)["resourceVersion"]
            except Exception:  # refused during the outage
                return False
            now = time.monotonic()
            if rv != seen["rv"]:
                seen["rv"], seen["since"] = rv, now
            return now - started > 4 and now - seen["since"] >= 0.5
        harness.wait_for(upstream_settled, timeout=30, interval=0.05, message="churn over, upstream back")

        last = {}

        def equal():
            want = truth()
            got = informer.dump_full()
            last["want"], last["got"] = want, got
            return got if got["dump"] == want else None
        try:
            final = harness.wait_for(equal, timeout=60, interval=0.1, message="cache == upstream truth")
        except AssertionError:
            want, got = last["want"], last["got"]["dump"]
            diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
            raise AssertionError("cache differs on %d keys, e.g. %s" % (len(diff), list(diff.items())[:5]))
        converged = time.monotonic() - started
        # Bookmarks (every second here) carry the store's RV up to the upstream's (W7).
        harness.wait_for(lambda: informer.dump_full()["rv"] == seen["rv"], timeout=10, interval=0.1,
                         message="store RV == upstream RV")

        c = clients.counters(base)
        changes = int(c["resourceVersion"]) - rv_before
        # The reflector's own full states: the first sync plus one per forced fault (the
        # compaction and possibly the outage outliving the 200-event window), never one per
        # dropped watch.
        relists = final["relists"]
        self.assertGreaterEqual(relists, 2, "the compaction must have forced a relist")
        self.assertLessEqual(relists, 4, "relisted for faults that only need a re-watch")
        # Upstream's view: LISTs of pods besides the test's own truth reads. Initial states
        # may also come from watch-list streams, so LISTs never exceed the relists.
        reflector_lists = c["requests"].get("list pods", 0) - truth_lists[0]
        pages_per_list = 1 + len(final["dump"]) // 500
        self.assertLessEqual(reflector_lists, relists * pages_per_list)
        if "--no-watch-list" in informer_args:
            # Every full state came from a paged LIST, none from anything else.
            self.assertGreaterEqual(reflector_lists, relists)
        mode = " ".join(informer_args) or "watch-list"
        print("informer-check %s: %d objects, %d RVs of changes, %d relists, %d reflector LIST requests, "
              "converged %.2fs after churn started"
              % (mode, len(final["dump"]), changes, relists, max(reflector_lists, 0), converged))


if __name__ == "__main__":
    unittest.main()
