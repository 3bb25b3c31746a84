"""Reusable pieces for integration tests: processes, ports, deadlines, RSS.

Every process started through `Processes` is stopped by PID on cleanup, also when
a test fails. Waiting is always for a condition with a deadline (`wait_for`),
never a fixed sleep.
"""
import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

BIN_DIR = os.environ.get("KCP_BIN_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))
PROXY_BIN = os.path.join(BIN_DIR, "kube-cache-proxy")
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"


def free_port():
    """A port that was free a moment ago (prefer port 0 where the program supports it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, timeout=5.0, interval=0.01, message="condition"):
    """Polls `condition` until it returns a truthy value or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (
                timeout, message() if callable(message) else message))
        time.sleep(interval)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for %d" % pid)


class Process:
    """A child process whose stdout announces `listening on HOST:PORT`."""

    def __init__(self, argv, ready_timeout=10.0):
        self.argv = argv
        self.stderr_file = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.stderr_file, text=True)
        self.pid = self.proc.pid
        self.address = None
        lines = []
        found = threading.Event()

        def read_stdout():
            for line in self.proc.stdout:
                lines.append(line)
                if line.startswith("listening on ") and not found.is_set():
                    self.address = line.split()[2]
                    found.set()

        self.reader = threading.Thread(target=read_stdout, daemon=True)
        self.reader.start()
        if not found.wait(ready_timeout):
            self.stop()
            raise AssertionError("%s did not report listening; stderr:\n%s" % (argv[0], self.stderr()))
        host, port = self.address.rsplit(":", 1)
        self.host, self.port = host, int(port)

    def stderr(self):
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode(errors="replace")

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.pid, sig)

    def stop(self, timeout=5.0):
        if self.alive():
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait()
        self.reader.join(timeout)
        self.proc.stdout.close()
        return self.proc.returncode


class Processes:
    """Owns every process a test starts; `stop_all` is registered as a cleanup."""

    def __init__(self):
        self.items = []

    def start(self, argv, **kwargs):
        p = Process(argv, **kwargs)
        self.items.append(p)
        return p

    def stub_upstream(self, *args):
        return self.start([PYTHON, os.path.join(HERE, "stub_upstream.py"), *args])

    def proxy(self, upstream_url, *args):
        return self.start([PROXY_BIN, "--listen", "127.0.0.1:0", "--upstream", upstream_url, *args])

    def stop_all(self):
        for p in reversed(self.items):
            p.stop()


def http_get(host, port, path, headers=None, timeout=10):
    """One GET on a fresh connection; returns (status, headers dict, body bytes)."""
    import http.client
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def read_until_close(sock, timeout=10):
    """Everything the server sends until it closes (a reset counts as a close)."""
    sock.settimeout(timeout)
    chunks = []
    while True:
        try:
            d = sock.recv(65536)
        except ConnectionResetError:
            break
        if not d:
            break
        chunks.append(d)
    return b"".join(chunks)


def raw_exchange(host, port, data, shut_wr=False, timeout=10):
    """Sends raw bytes and reads until the server closes; returns everything read."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(data)
        if shut_wr:
            s.shutdown(socket.SHUT_WR)
        return read_until_close(s, timeout)


def class_processes(case):
    """Processes stopped after the test class."""
    processes = Processes()
    case.addClassCleanup(processes.stop_all)
    return processes


def pki_workdir(case):
    """A temporary directory removed after the test class, with make_pki's files in it;
    sets `case.dir` and `case.pki`."""
    case.dir = tempfile.mkdtemp()
    case.addClassCleanup(shutil.rmtree, case.dir, True)
    case.pki = make_pki(case.dir)


def make_pki(directory):
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate,
    all signed by the CA, plus an unrelated second CA. Returns a dict of paths."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "other-ca"):
        run("req", "-x509", *ec, "-keyout", ca + ".key", "-out", ca + ".crt", "-subj", "/CN=" + ca, "-days", "2")
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    with open(os.path.join(directory, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    for name, subject in (("server", "/CN=127.0.0.1"), ("client", "/O=system:masters/CN=kube-cache-proxy")):
        run("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", subject)
        run("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext")
    return {k: os.path.join(directory, v) for k, v in {
        "ca": "ca.crt", "other_ca": "other-ca.crt", "server_cert": "server.crt", "server_key": "server.key",
        "client_cert": "client.crt", "client_key": "client.key"}.items()}


def timed_get(port, path, headers, context=None):
    """(status, seconds) of one GET on a fresh HTTP/1.1 connection."""
    conn = (http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10) if context
            else http.client.HTTPConnection("127.0.0.1", port, timeout=10))
    conn.connect()
    started = time.monotonic()
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    r.read()
    seconds = time.monotonic() - started
    conn.close()
    return r.status, seconds
