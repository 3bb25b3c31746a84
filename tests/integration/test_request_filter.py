"""kubectl proxy's request filter in a sidecar (issue 16: no Host check, so a browser on the
workstation could be DNS-rebound onto the sidecar and use its credentials).

The real proxy in front of the bundled test apiserver; refusals are compared with the
answer of a real `kubectl proxy` where kubectl is installed.
"""
import os
import re
import subprocess
import tempfile
import threading
import unittest

import clients
import harness

EXEC = "/api/v1/namespaces/default/pods/web-0/exec?command=ls&stdout=true"
ATTACH = "/api/v1/namespaces/default/pods/web-0/attach?stdout=true"


def exchange(port, method, path, host, body=b"", headers=b""):
    """One request on its own connection, Host exactly as given; (status, headers, body)."""
    head = ("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nConnection: close\r\n" %
            (method, path, host, len(body))).encode() + headers + b"\r\n"
    raw = harness.raw_exchange("127.0.0.1", port, head + body)
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return status, fields, rest


class RequestFilterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.procs = harness.Processes()
        cls.api = clients.start_apiserver(cls.procs, "--sample-data")
        cls.upstream = "http://127.0.0.1:%d" % cls.api.port
        cls.proxy = cls.procs.proxy(cls.upstream)

    @classmethod
    def tearDownClass(cls):
        cls.procs.stop_all()

    def proxy_with(self, *args):
        procs = harness.Processes()
        self.addCleanup(procs.stop_all)
        return procs.proxy(self.upstream, *args)

    def test_finding_metric_buckets_taken_before_authentication(self):
        """Issue 36, finding 5, in a sidecar: requests the filter refuses (a rebound page's)
        take no per-client bucket, and one address opens at most 8."""
        proxy = self.proxy_with()
        for i in range(40):
            agent = b"User-Agent: made-up-%d/1.0\r\n" % i
            self.assertRefusedAsKubectlProxy(exchange(proxy.port, "GET", "/api/v1/namespaces/default/pods",
                                                      "evil.example", headers=agent))
        self.assertEqual(exchange(proxy.port, "GET", "/version", "localhost", headers=b"User-Agent: newcomer/1\r\n")[0],
                         200)
        for i in range(20):
            agent = b"User-Agent: tool-%d/1.0\r\n" % i
            self.assertEqual(exchange(proxy.port, "GET", "/version", "localhost", headers=agent)[0], 200)
        body = exchange(proxy.port, "GET", "/metrics", "localhost")[2].decode()
        buckets = set(re.findall(r'^kube_cache_proxy_client_requests_total\{client="([^"]*)"\}', body, re.M))
        self.assertIn("newcomer", buckets)
        self.assertIn("unauthenticated", buckets)
        self.assertEqual([b for b in buckets if b.startswith("made-up")], [])
        self.assertEqual(len([b for b in buckets if b.startswith("tool-")]), 7)  # newcomer took the 8th
        self.assertIn("other", buckets)

    def assertRefusedAsKubectlProxy(self, answer):
        # k8s.io/kubectl/pkg/proxy FilterServer: http.Error(rw, "Forbidden", 403).
        status, fields, body = answer
        self.assertEqual(status, 403, body)
        self.assertEqual(fields.get("content-type"), "text/plain; charset=utf-8")
        self.assertEqual(fields.get("x-content-type-options"), "nosniff")
        self.assertEqual(body, b"Forbidden\n")

    def assertServed(self, answer):
        status, fields, body = answer
        self.assertEqual(status, 200, body)
        self.assertEqual(fields.get("content-type"), "application/json")

    def test_finding_dns_rebinding_host_is_refused(self):
        port = self.proxy.port
        # A rebound page sends its own name, with or without the port.
        for host in ("evil.example", "evil.example:%d" % port, "localhost.evil.example:%d" % port,
                     "127.0.0.1.nip.io:%d" % port):
            with self.subTest(host=host):
                self.assertRefusedAsKubectlProxy(exchange(port, "GET", "/api/v1/namespaces", host))
        # Nothing else is served to it either: writes, metrics.
        self.assertRefusedAsKubectlProxy(
            exchange(port, "POST", "/api/v1/namespaces/default/configmaps", "evil.example:%d" % port,
                     b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rebound"}}',
                     b"Content-Type: application/json\r\n"))
        self.assertRefusedAsKubectlProxy(exchange(port, "GET", "/metrics", "evil.example"))
        self.assertEqual(exchange(port, "GET", "/api/v1/namespaces/default/configmaps/rebound", "localhost")[0], 404)
        # What local clients send is served: with and without the port, IPv6 loopback too.
        for host in ("localhost:%d" % port, "127.0.0.1:%d" % port, "localhost", "127.0.0.1", "[::1]:%d" % port):
            with self.subTest(host=host):
                self.assertServed(exchange(port, "GET", "/api/v1/namespaces", host))
        # Health probes say only whether the proxy is up: never filtered.
        self.assertEqual(exchange(port, "GET", "/healthz", "evil.example")[0], 200)

    def test_exec_and_attach_are_refused_unless_reject_paths_is_narrowed(self):
        port = self.proxy.port
        self.assertRefusedAsKubectlProxy(exchange(port, "POST", EXEC, "localhost:%d" % port))
        self.assertRefusedAsKubectlProxy(exchange(port, "GET", EXEC, "127.0.0.1:%d" % port))
        self.assertRefusedAsKubectlProxy(exchange(port, "POST", ATTACH, "localhost"))
        # Matched on the decoded path: an escape is no way around it.
        self.assertRefusedAsKubectlProxy(exchange(port, "POST", EXEC.replace("/exec", "/%65xec"), "localhost"))
        # Other subresources are not in kubectl's list.
        status, _, body = exchange(port, "GET", "/api/v1/namespaces/default/pods/web-0/log", "localhost")
        self.assertNotEqual(body, b"Forbidden\n")
        # --reject-paths= refuses nothing: the apiserver answers the exec itself.
        open_proxy = self.proxy_with("--reject-paths=")
        status, fields, body = exchange(open_proxy.port, "POST", EXEC, "localhost")
        self.assertNotEqual(body, b"Forbidden\n")
        direct = exchange(self.api.port, "POST", EXEC, "localhost")
        self.assertEqual(status, direct[0])

    def test_reject_methods_post_refuses_writes(self):
        proxy = self.proxy_with("--reject-methods=POST")
        created = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"refused-write"}}'
        self.assertRefusedAsKubectlProxy(
            exchange(proxy.port, "POST", "/api/v1/namespaces/default/configmaps", "localhost", created,
                     b"Content-Type: application/json\r\n"))
        self.assertEqual(exchange(proxy.port, "GET", "/api/v1/namespaces/default/configmaps/refused-write",
                                  "localhost")[0], 404)
        self.assertServed(exchange(proxy.port, "GET", "/api/v1/namespaces", "localhost"))
        # Setting one list leaves the others at their defaults: the Host check still holds.
        self.assertRefusedAsKubectlProxy(exchange(proxy.port, "GET", "/api/v1/namespaces", "evil.example"))

    def test_accept_hosts_names_the_hosts_a_sidecar_serves(self):
        proxy = self.proxy_with("--accept-hosts", r"^kcp\.local$")
        self.assertServed(exchange(proxy.port, "GET", "/api/v1/namespaces", "kcp.local:8001"))
        self.assertRefusedAsKubectlProxy(exchange(proxy.port, "GET", "/api/v1/namespaces", "localhost"))

    def test_a_gateway_is_not_filtered_unless_its_operator_sets_the_flags(self):
        gateway = self.proxy_with("--mode", "gateway")
        # Without credentials a gateway answers 401 whatever the Host: no filter ran.
        status, fields, body = exchange(gateway.port, "GET", "/api/v1/namespaces", "evil.example")
        self.assertEqual(status, 401, body)
        self.assertEqual(fields.get("content-type"), "application/json")
        filtered = self.proxy_with("--mode", "gateway", "--accept-hosts", "^localhost$")
        self.assertRefusedAsKubectlProxy(exchange(filtered.port, "GET", "/api/v1/namespaces", "evil.example"))
        self.assertEqual(exchange(filtered.port, "GET", "/api/v1/namespaces", "localhost")[0], 401)

    def test_a_bad_regex_refuses_to_start(self):
        r = subprocess.run([harness.PROXY_BIN, "--listen", "127.0.0.1:0", "--upstream", self.upstream,
                            "--accept-hosts", r"^localhost$,^(evil"],
                           capture_output=True, text=True, timeout=20)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(r.stdout, "", "nothing started")
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn('--accept-hosts "^(evil": not a regular expression', lines[0])

    def test_refusals_are_byte_for_byte_kubectl_proxys(self):
        try:
            kubectl = clients.kubectl_binary()
        except RuntimeError:
            self.skipTest("no kubectl")
        workdir = tempfile.mkdtemp()
        config = clients.Kubectl(self.upstream, workdir).kubeconfig
        proc = subprocess.Popen([kubectl, "--kubeconfig", config, "proxy", "--port=0"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(lambda: (proc.kill(), proc.wait()))
        found = {}

        def read():
            for line in proc.stdout:
                m = re.search(r"Starting to serve on 127\.0\.0\.1:(\d+)", line)
                if m:
                    found["port"] = int(m.group(1))

        threading.Thread(target=read, daemon=True).start()
        harness.wait_for(lambda: "port" in found, timeout=20, message="kubectl proxy serving")
        for method, path, host in (("GET", "/api/v1/namespaces", "evil.example"),
                                   ("GET", "/api/v1/namespaces", "evil.example:8001"),
                                   ("POST", EXEC, "localhost"),
                                   ("GET", ATTACH, "127.0.0.1:8001")):
            with self.subTest(method=method, path=path, host=host):
                ours = exchange(self.proxy.port, method, path, host)
                theirs = exchange(found["port"], method, path, host)
                self.assertEqual(ours[0], theirs[0])
                self.assertEqual(ours[2], theirs[2])
                for name in ("content-type", "x-content-type-options", "content-length"):
                    self.assertEqual(ours[1].get(name), theirs[1].get(name), name)


if __name__ == "__main__":
    unittest.main()
