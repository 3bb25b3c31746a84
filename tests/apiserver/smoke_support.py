"""Shared helpers of the kube-test-apiserver smoke tests: the server process and requests."""
import http.client
import json
import os
import signal
import subprocess
import time
import unittest

BIN_DIR = os.environ.get("KCP_BIN_DIR", os.path.join(os.path.dirname(__file__), "../../build/bin"))
BINARY = os.path.join(BIN_DIR, "kube-test-apiserver")


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


class Server:
    def __init__(self, *args):
        self.proc = subprocess.Popen([BINARY, "--listen", "127.0.0.1:0", "--enable-control", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError("server did not start: " + line + self.proc.stderr.read())
        self.host, port = line.split()[-1].rsplit(":", 1)
        self.port = int(port)

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()

    def request(self, method, path, body=None, headers=None, timeout=30):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        hdrs = {"Accept": "application/json"}
        hdrs.update(headers or {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp, data

    def json(self, method, path, body=None, headers=None, expect=None):
        resp, data = self.request(method, path, body, headers)
        if expect is not None and resp.status != expect:
            raise AssertionError("%s %s: %d %s" % (method, path, resp.status, data[:500]))
        return resp.status, json.loads(data) if data else None

    def open_watch(self, path):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        conn.request("GET", path, headers={"Accept": "application/json"})
        return conn, conn.getresponse()


def make_namespace(srv, name):
    srv.json("POST", "/api/v1/namespaces", {"metadata": {"name": name}}, expect=201)


def make_configmap(srv, ns, name, data=None):
    return srv.json("POST", "/api/v1/namespaces/%s/configmaps" % ns,
                    {"metadata": {"name": name}, "data": data or {"k": "v"}}, expect=201)[1]


class ServerTest(unittest.TestCase):
    """A test class sharing one server, started with SERVER_ARGS."""
    SERVER_ARGS = ("--sample-data",)

    @classmethod
    def setUpClass(cls):
        cls.srv = Server(*cls.SERVER_ARGS)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
