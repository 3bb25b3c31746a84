"""Reusable pieces for integration tests: processes, ports, deadlines, RSS.

Every process started through `Processes` is stopped by PID on cleanup, also when
a test fails. Waiting is always for a condition with a deadline (`wait_for`),
never a fixed sleep.
"""
import os
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
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, message))
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
