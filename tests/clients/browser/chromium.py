"""Headless Chromium (Debian's /usr/bin/chromium) driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: commands on fd 3, answers and events on fd 4, each message JSON
ended by a NUL), so no driver library is needed.

`Browser.open_page(url, html)` opens a tab whose request for `url` is answered with `html`
by the browser itself (Fetch.fulfillRequest): the page then has the origin of `url`, e.g.
the API server's, as a UI served next to the API would (`kubectl proxy --www`). Every other request goes to the
network, and the browser's own record of them (the headers it sent, the protocol, the
WebSocket handshakes) is kept in `Browser.network`.
"""
import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time

CHROMIUM = os.environ.get("KCP_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-pipe"]
PAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def page_html():
    with open(os.path.join(PAGE_DIR, "index.html"), encoding="utf-8") as f:
        return f.read()


class Browser:
    def __init__(self, ignore_certificate_errors=False):
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        flags = list(FLAGS) + ["--user-data-dir=" + self.profile]
        if ignore_certificate_errors:
            flags.append("--ignore-certificate-errors")

        def child_fds():
            # Through numbers above 4 first: either end may itself be 3 or 4.
            r, w = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([CHROMIUM, *flags, "about:blank"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.stderr, preexec_fn=child_fds,
                                     pass_fds=(3, 4))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._answers = {}
        self._answered = threading.Condition()
        self.events = queue.Queue()
        self.network = []          # (method, params) of Network.* events, in order
        self.fulfilled = {}        # url -> html, for Fetch.requestPaused
        self.session = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf = b""
        while True:
            try:
                data = os.read(self._from_chrome, 1 << 16)
            except OSError:
                data = b""
            if not data:
                with self._answered:
                    self._answers["closed"] = True
                    self._answered.notify_all()
                return
            buf += data
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._answered:
                        self._answers[msg["id"]] = msg
                        self._answered.notify_all()
                else:
                    self._event(msg)

    def _event(self, msg):
        method, params = msg.get("method", ""), msg.get("params", {})
        if method == "Fetch.requestPaused":
            url = params["request"]["url"]
            html = next((h for u, h in self.fulfilled.items() if url.split("?")[0] == u.split("?")[0]), None)
            if html is None:
                self.send("Fetch.continueRequest", {"requestId": params["requestId"]}, wait=False)
            else:
                self.send("Fetch.fulfillRequest", {
                    "requestId": params["requestId"], "responseCode": 200,
                    "responseHeaders": [{"name": "Content-Type", "value": "text/html; charset=utf-8"}],
                    "body": base64.b64encode(html.encode()).decode()}, wait=False)
        elif method.startswith("Network."):
            self.network.append((method, params))
        self.events.put(msg)

    def send(self, method, params=None, wait=True, timeout=30, session=True):
        with self._lock:
            self._next_id += 1
            mid = self._next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        if not wait:
            return None
        deadline = time.monotonic() + timeout
        with self._answered:
            while mid not in self._answers:
                if self._answers.get("closed"):
                    raise AssertionError("chromium exited: %s" % self.stderr_text()[-2000:])
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("chromium did not answer %s in %ds" % (method, timeout))
                self._answered.wait(left)
            answer = self._answers.pop(mid)
        if "error" in answer:
            raise AssertionError("%s: %s" % (method, answer["error"]))
        return answer.get("result", {})

    def open_page(self, url, html):
        """A new tab showing `html` as the document at `url`."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.fulfilled[url] = html
        # A document the browser fulfilled has no IP address space of its own ("Unknown"), so
        # Chromium's Local Network Access checks would refuse its WebSocket to 127.0.0.1 (its
        # same-origin fetch() passes): the origin gets the loopback-network permission, as a
        # user's "Allow" would give it. A UI served from loopback needs none.
        origin = "/".join(url.split("/")[:3])
        self.send("Browser.grantPermissions", {"permissions": ["loopbackNetwork"], "origin": origin}, session=False)
        self.send("Network.enable")
        self.send("Fetch.enable", {"patterns": [{"urlPattern": url.split("?")[0] + "*", "requestStage": "Request"}]})
        self.send("Page.enable")
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise AssertionError("page script failed: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def stderr_text(self):
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("Browser.close", session=False, timeout=5)
            except AssertionError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        self.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)
