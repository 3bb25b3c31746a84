"""Per-flow shares (issue 34): one client that holds its seats for long never pushes
another out. The attacks follow the security review's reproductions:

- window-0 LISTs: LIST streams over 64 KiB on HTTP/2 connections that never open their
  stream windows (and the HTTP/1.1 form, clients that never read their answers) hold
  their seats until the write timeout;

during each, a bystander's cached GET and pass-through GET are answered at once while
the attacker's requests beyond its share wait briefly and get the apiserver's 429 with
Retry-After. A flow is the client's address and User-Agent in a sidecar, the
authenticated user in a gateway (as API Priority and Fairness distinguishes flows).
"""
import http.client
import json
import socket
import ssl
import unittest

import clients
import harness
from h2client import H2Client

SEATS = 16  # --max-requests-inflight: 4 of them kept for flows under their fair share
ATTACKERS = 20  # more than the attacker's share, so that its excess waits and gets 429
LIST = "/api/v1/pods"  # about 3 MB: far more than a stream window or a socket buffer holds
CACHED_GET = "/api/v1/namespaces/a/pods/p-a"
PASSED_GET = "/api/v1/namespaces/a"  # namespaces are not cached here


def refusals(port, context=None):
    """The proxy's count of requests refused for want of a seat (a gateway's /metrics
    wants an authenticated caller)."""
    conn = (http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10) if context
            else http.client.HTTPConnection("127.0.0.1", port, timeout=10))
    conn.request("GET", "/metrics", headers={"Authorization": "Bearer admin-token"} if context else {})
    r = conn.getresponse()
    text = r.read().decode()
    assert r.status == 200, (r.status, text[:200])
    conn.close()
    prefix = 'kube_cache_proxy_limit_refusals_total{limit="requests"} '
    return sum(float(line[len(prefix):]) for line in text.splitlines() if line.startswith(prefix))


def post(api_url, path, body, token=None):
    conn = http.client.HTTPConnection(api_url.split("//")[1].split(":")[0], int(api_url.rsplit(":", 1)[1]), timeout=10)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    conn.request("POST", path, body=json.dumps(body), headers=headers)
    r = conn.getresponse()
    r.read()
    conn.close()
    assert r.status == 201, (path, r.status)


class FlowSharesBase:
    """The bystander's reads while an attacker holds its seats; subclasses say how the
    attacker and the bystander reach the proxy."""

    def load_pods(self, api_url, token=None):
        clients.request(api_url + "/control/load?resource=pods&count=3000&namespaces=3&nodes=3", "POST", {})
        post(api_url, "/api/v1/namespaces", {"metadata": {"name": "a"}}, token)
        post(api_url, "/api/v1/namespaces/a/pods", clients.pod("p-a"), token)

    def assert_bystander_served(self, port, headers, context=None):
        # The best of three: a bystander served from a free seat answers in milliseconds,
        # one queued behind the attacker would wait its second and get 429.
        for path in (CACHED_GET, PASSED_GET):
            answers = [harness.timed_get(port, path, headers, context) for _ in range(3)]
            self.assertEqual([status for status, _ in answers], [200, 200, 200], path)
            best = min(seconds for _, seconds in answers)
            self.assertLess(best, 0.1, "%s answered in %.3f s during the attack" % (path, best))

    def stall_h2(self, port, headers, context=None, connections=2):
        """LIST streams on `connections` HTTP/2 connections whose stream windows never open:
        each stalls after its first 64 KiB with its seat held."""
        attackers = []
        for _ in range(connections):
            client = H2Client("127.0.0.1", port, context)
            self.addCleanup(client.close)
            attackers.append(client)
        streams = []
        for i in range(ATTACKERS):
            client = attackers[i % connections]
            s = client.request("GET", LIST, headers)
            client.stalled.add(s.id)
            streams.append((client, s))
        return attackers, streams

    def wait_for_attackers_refused(self, attackers, streams, port, context=None):
        def refused():
            for client in attackers:
                client.pump(0.05)
            return sum(1 for _, s in streams if s.status == 429 and s.ended) >= 1
        harness.wait_for(refused, timeout=15, interval=0.01, message="the attacker's excess refused with 429")
        self.assertGreaterEqual(refusals(port, context), 1)
        for _, s in streams:
            if s.status == 429 and s.ended:
                self.assertEqual(s.headers.get("retry-after"), "1")
                self.assertEqual(bytes(s.data), b"Too many requests, please try again later.\n")


class SidecarFlowSharesTest(FlowSharesBase, unittest.TestCase):
    def setUp(self):
        self.procs = harness.Processes()
        self.addCleanup(self.procs.stop_all)
        self.api = clients.start_apiserver(self.procs, "--enable-control")
        url = "http://127.0.0.1:%d" % self.api.port
        self.load_pods(url)
        self.proxy = self.procs.proxy(url, "--cache", "pods", "--cache-on-demand=false",
                                      "--max-requests-inflight", str(SEATS))
        harness.wait_for(lambda: harness.http_get("127.0.0.1", self.proxy.port, "/readyz")[0] == 200, timeout=30,
                         message="the pods cache to sync")

    def test_window_0_lists_over_http2_leave_a_bystander_served(self):
        attackers, streams = self.stall_h2(self.proxy.port, {"user-agent": "attacker"})
        self.wait_for_attackers_refused(attackers, streams, self.proxy.port)
        self.assert_bystander_served(self.proxy.port, {"User-Agent": "bystander"})

    def test_lists_never_read_over_http1_leave_a_bystander_served(self):
        socks = []
        for _ in range(ATTACKERS):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", self.proxy.port))
            s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: attacker\r\n\r\n" % LIST).encode())
            socks.append(s)
            self.addCleanup(s.close)
        harness.wait_for(lambda: refusals(self.proxy.port) >= 1, timeout=15, interval=0.05,
                         message="the attacker's excess refused with 429")
        self.assert_bystander_served(self.proxy.port, {"User-Agent": "bystander"})
        # The attacker's own address with another User-Agent is another flow in a sidecar.
        status, _ = harness.timed_get(self.proxy.port, CACHED_GET, {"User-Agent": "attacker-2"})
        self.assertEqual(status, 200)


class GatewayFlowSharesTest(FlowSharesBase, unittest.TestCase):
    """In a gateway the flow is the user: bob's stalled LISTs leave alice served, over the
    HTTP/2 that client-go speaks on TLS."""

    @classmethod
    def setUpClass(cls):
        harness.pki_workdir(cls)
        cls.procs = harness.Processes()
        cls.addClassCleanup(cls.procs.stop_all)
        cls.api = clients.start_apiserver(cls.procs, "--authn", "--enable-control")
        url = "http://127.0.0.1:%d" % cls.api.port
        FlowSharesBase.load_pods(cls, url, "admin-token")
        cls.proxy = cls.procs.start([
            harness.PROXY_BIN, "--listen", "127.0.0.1:0", "--upstream", url, "--token", "proxy-token",
            "--mode", "gateway", "--cache", "pods", "--cache-on-demand=false",
            "--tls-cert-file", cls.pki["server_cert"], "--tls-private-key-file", cls.pki["server_key"],
            "--max-requests-inflight", str(SEATS)])
        cls.context = ssl.create_default_context(cafile=cls.pki["ca"])
        cls.h2_context = ssl.create_default_context(cafile=cls.pki["ca"])
        cls.h2_context.set_alpn_protocols(["h2"])
        harness.wait_for(lambda: harness.timed_get(cls.proxy.port, "/readyz", {}, cls.context)[0] == 200, timeout=30,
                         message="the gateway ready")

    def test_window_0_lists_of_one_user_leave_another_user_served(self):
        attackers, streams = self.stall_h2(self.proxy.port, {"authorization": "Bearer admin-token"}, self.h2_context)
        self.wait_for_attackers_refused(attackers, streams, self.proxy.port, self.context)
        self.assert_bystander_served(self.proxy.port, {"Authorization": "Bearer bob-token"}, self.context)


if __name__ == "__main__":
    unittest.main()
