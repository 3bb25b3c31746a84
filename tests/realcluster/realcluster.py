"""A real Kubernetes control plane for the integration tests: etcd and kube-apiserver
built from the Go modules (scripts/realcluster-build.sh), started by the `controlplane`
program of this folder on 127.0.0.1 ports it picks, with the test identities, the Widget
CRD and the sample data. Tests of this tier are skipped when KCP_REALCLUSTER_BIN (the
folder of the built binaries) is unset; scripts/test.sh always sets it.
"""
import http.client
import json
import os
import queue
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import clients  # noqa: E402
import harness  # noqa: E402

BIN = os.environ.get("KCP_REALCLUSTER_BIN", "")
CLIENTS_DIR = os.path.join(HERE, "..", "clients")
# For the Java test clients: a small heap and the client compiler, so that a JVM starts in
# about a second on a busy 2-core machine.
JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m"]
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

    def __init__(self, processes, workdir=None, feature_gates=""):
        self.dir = tempfile.mkdtemp(prefix="controlplane-", dir=workdir)
        argv = [tool("controlplane"), "--dir", self.dir, "--bin", BIN]
        if feature_gates:
            argv += ["--feature-gates", feature_gates]
        self.process = processes.start(argv, ready_timeout=240)
        self.port = self.process.port
        self.url = "https://127.0.0.1:%d" % self.port
        with open(os.path.join(self.dir, "control")) as f:
            self.control_url = f.read().strip()
        self.ca = os.path.join(self.dir, "ca.crt")
        self.ssl = ssl.create_default_context(cafile=self.ca)

    def kubeconfig(self, who="admin"):
        return os.path.join(self.dir, who + ".kubeconfig")

    def connection(self, timeout=30, port=None):
        return http.client.HTTPSConnection("127.0.0.1", port or self.port, context=self.ssl, timeout=timeout)

    def request(self, path, method="GET", body=None, who="admin", headers=None, content_type="application/json",
                port=None):
        """One request to the apiserver (or, with `port`, to the second one)."""
        conn = self.connection(port=port)
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

    def stop_apiserver(self, kill=True):
        """Stops kube-apiserver (SIGKILL by default, as a crash); the Unix ms it stopped at."""
        return json.loads(self.control("/apiserver/stop?kill=%d" % int(kill)))["stopped"]

    def start_apiserver(self, down=3.0):
        """Starts kube-apiserver again once `down` seconds passed since the stop; returns the
        Unix ms it started at, first answered and was first ready at ({"started",
        "answering", "ready"})."""
        return json.loads(self.control("/apiserver/start?down=%dms" % int(down * 1000)))

    def second_apiserver(self):
        """A second kube-apiserver on the same etcd (started once); its port."""
        url = json.loads(self.control("/second-apiserver"))["url"]
        return int(url.rsplit(":", 1)[1])

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


def start_plane(case, prefix, class_level=False, feature_gates=""):
    """A work folder, a Processes owner and a ControlPlane for a test (or, with
    `class_level`, a TestCase class): cleanups stop every process by PID, then remove the
    folder (etcd's data included)."""
    import shutil
    add_cleanup = case.addClassCleanup if class_level else case.addCleanup
    case.workdir = tempfile.mkdtemp(prefix=prefix)
    add_cleanup(shutil.rmtree, case.workdir, ignore_errors=True)
    case.processes = harness.Processes()
    add_cleanup(case.processes.stop_all)
    case.plane = ControlPlane(case.processes, case.workdir, feature_gates)
    return case.plane


def start_proxy(processes, plane, *args, who="admin", tls=None, binary=None):
    """The proxy (`binary`, else this build's) in front of `plane` with `who`'s kubeconfig;
    waits until /readyz is 200 (over HTTPS verified with the SSLContext `tls` when the
    proxy serves TLS)."""
    px = processes.start([binary or harness.PROXY_BIN, "--listen", "127.0.0.1:0", "--kubeconfig", plane.kubeconfig(who), *args],
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


class NamespaceWrites:
    """For a TestCase with a `plane`: namespaces of ConfigMaps and Pods, and writes to them,
    sent to the apiserver directly."""

    def namespace(self, name, configmaps=5, pods=2):
        """A namespace with a few ConfigMaps (cm-N) and Pods (pod-N)."""
        a = self.plane.request("/api/v1/namespaces", "POST", {"metadata": {"name": name}})
        self.assertEqual(a.status, 201, a.body)
        for i in range(configmaps):
            self.write("POST", name, "configmaps", body={"metadata": {"name": "cm-%d" % i}, "data": {"i": str(i)}})
        for i in range(pods):
            self.write("POST", name, "pods", body=clients.pod("pod-%d" % i))
        return name

    def write(self, method, namespace, resource, name=None, body=None):
        """POST, PATCH (a merge patch) or DELETE; returns the answer's resourceVersion."""
        path = "/api/v1/namespaces/%s/%s" % (namespace, resource) + ("/" + name if name else "")
        ct = "application/merge-patch+json" if method == "PATCH" else "application/json"
        a = self.plane.request(path, method, body, content_type=ct)
        self.assertIn(a.status, (200, 201), a.body)
        return a.json().get("metadata", {}).get("resourceVersion")

    def truth(self, namespace, resource="configmaps"):
        return self.plane.truth("/api/v1/namespaces/%s/%s" % (namespace, resource))


def build_client(name):
    """Builds the test client of tests/clients/NAME with its build.sh (once per machine, cached
    under ~/.cache/kube-cache-proxy); returns the folder it printed."""
    r = subprocess.run(["bash", os.path.join(CLIENTS_DIR, name, "build.sh")], capture_output=True, text=True,
                       timeout=1800)
    if r.returncode != 0:
        raise AssertionError("building the %s test client failed:\n%s" % (name, r.stderr[-3000:]))
    return r.stdout.strip().splitlines()[-1]


class LineProcess(clients.LineClient):
    """A test client process of tests/clients that prints JSON lines and answers "dump" on
    stdin; its stderr (the library's log) goes to a file."""
    name = "client"

    def __init__(self, argv, env=None):
        self.stderr_file = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr_file,
                                     text=True, env=env)
        self.lines = queue.Queue()
        self.events = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def stderr(self):
        self.stderr_file.seek(0)
        return self.stderr_file.read()

    def stop(self):
        super().stop()
        self.reader.join(5)
        for f in (self.proc.stdin, self.proc.stdout, self.stderr_file):
            try:
                f.close()
            except OSError:
                pass

    def check_alive(self):
        if self.proc.poll() is not None:
            raise AssertionError("%s exited (%s): %s" % (self.name, self.proc.returncode, self.stderr()[-3000:]))

    def first(self, predicate, timeout, what):
        """The first line (parsed) that `predicate` accepts, waiting up to `timeout` s for it."""
        found = []

        def seen():
            self.check_alive()
            self._drain()
            found[:] = [e for e in self.events if predicate(e)][:1]
            return found
        harness.wait_for(seen, timeout=timeout, interval=0.02,
                         message=lambda: "%s; the client's last lines: %s" % (what, self.events[-4:]))
        return found[0]

    def terminate(self, timeout=20):
        """SIGTERM; returns the exit code (None if it did not exit)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
