"""Real third-party clients driven against a Kubernetes API endpoint: kubectl, the
@kubernetes/client-node informer and python-kubernetes' watch loop. The same helpers
serve tests that talk to the test apiserver directly and through the proxy.
"""
import json
import os
import queue
import subprocess
import tempfile
import threading
import time
import urllib.request

import harness

ROOT = os.path.abspath(os.path.join(harness.HERE, "..", ".."))
CLIENTS = os.path.join(ROOT, "tests", "clients")
APISERVER_BIN = os.environ.get("KCP_APISERVER_BIN") or os.path.join(harness.BIN_DIR, "kube-test-apiserver")


def kubectl_binary():
    for candidate in (os.environ.get("KUBECTL"), os.path.join(ROOT, ".tools", "bin", "kubectl"), "/usr/bin/kubectl"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("no kubectl: run scripts/install-deps.sh")


def start_apiserver(processes, *args):
    return processes.start([APISERVER_BIN, "--listen", "127.0.0.1:0", *args])


class Kubectl:
    """kubectl with its own kubeconfig and discovery cache, pointed at one server."""

    def __init__(self, server_url, workdir):
        self.dir = tempfile.mkdtemp(dir=workdir)
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            f.write(
                "apiVersion: v1\nkind: Config\n"
                "clusters:\n- name: c\n  cluster:\n    server: %s\n"
                "users:\n- name: u\n  user:\n    token: test-token\n"
                "contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
                "current-context: c\n" % server_url)
        self.base = [kubectl_binary(), "--kubeconfig", self.kubeconfig, "--cache-dir", os.path.join(self.dir, "cache")]

    def run(self, *args, stdin=None, timeout=60, check=True):
        r = subprocess.run(self.base + list(args), input=stdin, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
        return r

    def popen(self, *args):
        return subprocess.Popen(self.base + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class LineClient:
    """A client process printing JSON lines; answers "dump" on stdin with its state."""

    def __init__(self, argv, cwd):
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.events = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                pass

    def _drain(self):
        while True:
            try:
                self.events.append(self.lines.get_nowait())
            except queue.Empty:
                return

    def wait_event(self, predicate, timeout=20):
        def seen():
            self._drain()
            return any(predicate(e) for e in self.events)
        harness.wait_for(seen, timeout=timeout, message="client event")

    def dump(self, timeout=10):
        self._drain()
        before = len(self.events)
        self.proc.stdin.write("dump\n")
        self.proc.stdin.flush()

        def got():
            self._drain()
            return next((e["dump"] for e in self.events[before:] if "dump" in e), None)
        return harness.wait_for(got, timeout=timeout, message="dump answer")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def node_informer(server_url, api_version="v1", kind="Pod", path="/api/v1/pods"):
    return LineClient(["node", "informer.mjs", server_url, api_version, kind, path], CLIENTS)


def python_informer(server_url):
    return LineClient([harness.PYTHON, "py_informer.py", server_url], CLIENTS)


def request(url, method="GET", body=None, content_type="application/json"):
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def control(base_url, path):
    """POSTs to one of the test apiserver's /control endpoints; its JSON answer."""
    status, body = request(base_url + path, "POST", b"")
    assert status == 200, (path, status, body)
    return json.loads(body) if body else {}


def counters(base_url):
    """The test apiserver's request counters (/control/counters)."""
    status, body = request(base_url + "/control/counters")
    assert status == 200, body
    return json.loads(body)


def truth(base_url, path="/api/v1/pods"):
    """The upstream's state: key -> resourceVersion."""
    status, body = request(base_url + path)
    assert status == 200, body
    out = {}
    for item in json.loads(body)["items"]:
        m = item["metadata"]
        out[("%s/%s" % (m["namespace"], m["name"])) if m.get("namespace") else m["name"]] = m["resourceVersion"]
    return out


def pod(name, labels=None):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {"app": "t"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def random_changes(base_url, namespace, count, seed=1):
    """Creates, updates and deletes pods in `namespace` directly on the upstream."""
    import random
    rnd = random.Random(seed)
    live = set()
    for i in range(count):
        op = rnd.random()
        if not live or op < 0.4:
            name = "p-%d" % i
            status, _ = request("%s/api/v1/namespaces/%s/pods" % (base_url, namespace), "POST", pod(name))
            assert status == 201, status
            live.add(name)
        elif op < 0.8:
            name = rnd.choice(sorted(live))
            patch = {"metadata": {"labels": {"rev": str(i)}}}
            status, _ = request("%s/api/v1/namespaces/%s/pods/%s" % (base_url, namespace, name), "PATCH",
                                patch, "application/merge-patch+json")
            assert status == 200, status
        else:
            name = rnd.choice(sorted(live))
            status, _ = request("%s/api/v1/namespaces/%s/pods/%s" % (base_url, namespace, name), "DELETE")
            assert status == 200, status
            live.discard(name)


def ensure_namespace(base_url, name):
    status, body = request(base_url + "/api/v1/namespaces", "POST", {"metadata": {"name": name}})
    assert status in (201, 409), body


def wait_equal(client, base_url, timeout=30):
    """Waits until the client's dump equals the upstream's pods."""
    last = {}

    def equal():
        want = truth(base_url)
        got = client.dump()
        last["want"], last["got"] = want, got
        return got == want
    try:
        harness.wait_for(equal, timeout=timeout, interval=0.2, message="client state == upstream truth")
    except AssertionError:
        want, got = last.get("want", {}), last.get("got", {})
        diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
        raise AssertionError("client differs from upstream on %d keys, e.g. %s" % (len(diff), list(diff.items())[:5]))
