"""Memory that connections leave behind when they end (issue 32): a burst of TLS connections
(a gateway's clients reconnecting after a restart, or Go's transport dialing once per
request before its first HTTP/2 handshake ends) must not stay in the proxy's RSS once they
are gone. Each held about 90 KiB of record buffers while it lived; glibc kept what they
freed, 186 MB after 2,000 of them, until the proxy returned it (proxy/server/heap_scavenger.h).
"""
import os
import subprocess
import unittest

import clients
import harness

CONNECTIONS = 600


@unittest.skipIf(os.environ.get("KCP_SANITIZED") == "1" or os.environ.get("KCP_TSAN") == "1",
                 "a sanitizer's allocator keeps freed memory in its own quarantine, not glibc's arenas")
class ConnectionMemoryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.pki_workdir(cls)
        cls.procs = harness.Processes()
        cls.addClassCleanup(cls.procs.stop_all)
        api = clients.start_apiserver(cls.procs)
        cls.proxy = cls.procs.proxy("http://127.0.0.1:%d" % api.port, "--cache", "pods", "--max-connections", "0",
                                    "--tls-cert-file", cls.pki["server_cert"],
                                    "--tls-private-key-file", cls.pki["server_key"])
        cls.url = "https://127.0.0.1:%d" % cls.proxy.port
        harness.wait_for(lambda: subprocess.run(["curl", "-sk", cls.url + "/readyz"], capture_output=True).stdout == b"ok",
                         timeout=30, message="proxy ready")

    def test_a_burst_of_tls_connections_leaves_no_heap_behind(self):
        before = harness.rss_kib(self.proxy.pid)
        # Every connection open at once, each with a watch that ends after 2 s.
        out = subprocess.run(["h2load", "--h1", "-n", str(CONNECTIONS), "-c", str(CONNECTIONS), "-t", "1",
                              self.url + "/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=2"],
                             capture_output=True, text=True, timeout=120)
        self.assertIn("%d succeeded" % CONNECTIONS, out.stdout, out.stdout[-2000:])
        # Kept, they would hold ~54 MB; the bound leaves room for what the watches and the
        # allocator keep for the next ones.
        bound = before + CONNECTIONS * 25
        harness.wait_for(lambda: harness.rss_kib(self.proxy.pid) < bound, timeout=10,
                         message="RSS back under %d KiB (before the burst %d KiB)" % (bound, before))


if __name__ == "__main__":
    unittest.main()
