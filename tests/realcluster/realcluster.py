"""A real Kubernetes control plane for the integration tests: etcd and kube-apiserver
built from the Go modules (scripts/realcluster-build.sh), started by the `controlplane`
program of this folder on 127.0.0.1 ports it picks, with the test identities, the Widget
CRD and the sample data. Tests of this tier are skipped when KCP_REALCLUSTER_BIN (the
folder of the built binaries) is unset; scripts/test.sh always sets it.
"""
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import harness  # noqa: E402

BIN = os.environ.get("KCP_REALCLUSTER_BIN", "")
TOKENS = {"admin": "admin-token", "limited": "limited-token", "nobody": "nobody-token", "proxy": "proxy-token",
          "controller-manager": "kcm-token", "scheduler": "scheduler-token", "node-1": "node-1-token"}


def require_bin(test_case_class):
    """Skips a TestCase class when no control plane was built."""
    if not BIN or not os.path.exists(os.path.join(BIN, "kube-apiserver")):
        return unittest.skip("KCP_REALCLUSTER_BIN unset: scripts/realcluster-build.sh builds the control plane")(
            test_case_class)
    return test_case_class


def tool(name):
    return os.path.join(BIN, name)


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


class ControlPlane:
    """One etcd + kube-apiserver, stopped by PID through `processes`."""

    def __init__(self, processes, workdir=None):
        self.dir = tempfile.mkdtemp(prefix="controlplane-", dir=workdir)
        self.process = processes.start([tool("controlplane"), "--dir", self.dir, "--bin", BIN], ready_timeout=240)
        self.port = self.process.port
        self.url = "https://127.0.0.1:%d" % self.port
        with open(os.path.join(self.dir, "control")) as f:
            self.control_url = f.read().strip()
        self.ca = os.path.join(self.dir, "ca.crt")
        self.ssl = ssl.create_default_context(cafile=self.ca)

    def kubeconfig(self, who="admin"):
        return os.path.join(self.dir, who + ".kubeconfig")

    def connection(self, timeout=30):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ssl, timeout=timeout)

    def request(self, path, method="GET", body=None, who="admin", headers=None, content_type="application/json"):
        conn = self.connection()
        try:
            h = dict(headers or {})
            if who:
                h["Authorization"] = "Bearer " + TOKENS[who]
            data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
            if data is not None:
                h.setdefault("Content-Type", content_type)
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            return Answer(r.status, r.getheaders(), r.read())
        finally:
            conn.close()

    def control(self, path, method="POST"):
        u = urllib.parse.urlparse(self.control_url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=180)
        try:
            conn.request(method, path)
            r = conn.getresponse()
            body = r.read().decode()
            if r.status != 200:
                raise AssertionError("control %s: %d %s" % (path, r.status, body))
            return body.strip()
        finally:
            conn.close()

    def restart_apiserver(self):
        self.control("/restart-apiserver")

    def compact(self):
        return int(self.control("/compact"))

    def revision(self):
        return int(self.control("/revision", "GET"))

    def churn(self, nodes=0, events=0.0, interval="10s"):
        self.control("/churn?nodes=%d&events=%g&interval=%s" % (nodes, events, interval))

    def stop_churn(self):
        self.control("/churn/stop")

    def truth(self, path="/api/v1/pods"):
        """The apiserver's state: key -> resourceVersion."""
        a = self.request(path)
        assert a.status == 200, a.body
        out = {}
        for item in a.json()["items"]:
            m = item["metadata"]
            out[("%s/%s" % (m["namespace"], m["name"])) if m.get("namespace") else m["name"]] = m["resourceVersion"]
        return out


def start_plane(case, prefix, class_level=False):
    """A work folder, a Processes owner and a ControlPlane for a test (or, with
    `class_level`, a TestCase class): cleanups stop every process by PID, then remove the
    folder (etcd's data included)."""
    import shutil
    add_cleanup = case.addClassCleanup if class_level else case.addCleanup
    case.workdir = tempfile.mkdtemp(prefix=prefix)
    add_cleanup(shutil.rmtree, case.workdir, ignore_errors=True)
    case.processes = harness.Processes()
    add_cleanup(case.processes.stop_all)
    case.plane = ControlPlane(case.processes, case.workdir)
    return case.plane


def start_proxy(processes, plane, *args, who="admin", tls=None):
    """The proxy in front of `plane` with `who`'s kubeconfig; waits until /readyz is 200
    (over HTTPS verified with the SSLContext `tls` when the proxy serves TLS)."""
    px = processes.start([harness.PROXY_BIN, "--listen", "127.0.0.1:0", "--kubeconfig", plane.kubeconfig(who), *args],
                         ready_timeout=30)

    def ready():
        conn = http.client.HTTPSConnection("127.0.0.1", px.port, context=tls, timeout=10) if tls else \
            http.client.HTTPConnection("127.0.0.1", px.port, timeout=10)
        try:
            conn.request("GET", "/readyz")
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()
    harness.wait_for(ready, timeout=60, interval=0.05, message="proxy ready")
    return px


def proxy_kubeconfig(directory, port):
    """A kubeconfig for a client of a sidecar proxy (no credentials: the proxy adds its own)."""
    path = os.path.join(directory, "proxy-client-%d.kubeconfig" % port)
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: p\n  cluster:\n    server: http://127.0.0.1:%d\n"
                "users:\n- name: u\n  user: {}\ncontexts:\n- name: p\n  context:\n    cluster: p\n    user: u\n"
                "current-context: p\n" % port)
    return path


class Kubectl:
    """The kubectl built with the control plane (same version), with its own discovery cache."""

    def __init__(self, kubeconfig, workdir):
        self.dir = tempfile.mkdtemp(dir=workdir)
        self.base = [tool("kubectl"), "--kubeconfig", kubeconfig, "--cache-dir", os.path.join(self.dir, "cache")]

    def run(self, *args, stdin=None, timeout=60, check=True, env=None):
        r = subprocess.run(self.base + list(args), input=stdin, capture_output=True, text=True, timeout=timeout,
                           env=env)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
        return r

    def popen(self, *args):
        return subprocess.Popen(self.base + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class LineReader:
    """Collects a process's stdout lines (whitespace collapsed) on a thread."""

    def __init__(self, proc):
        import threading
        self.proc = proc
        self.lines = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(" ".join(line.split()))
