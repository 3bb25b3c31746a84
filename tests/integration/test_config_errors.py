"""Bad configuration stops the real binary before anything starts: one clear line
on stderr, a non-zero exit, nothing listening (issue acceptance: bad config)."""
import os
import subprocess
import tempfile
import unittest

import harness


def run(*args, env_extra=None):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": tempfile.mkdtemp()}
    env.update(env_extra or {})
    return subprocess.run([harness.PROXY_BIN, *args], capture_output=True, text=True, timeout=20, env=env)


class ConfigErrorsTest(unittest.TestCase):
    def assertOneLineError(self, r, *fragments):
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(r.stdout, "", "nothing started")
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, r.stderr)
        for f in fragments:
            self.assertIn(f, lines[0])

    def kubeconfig(self, text):
        path = os.path.join(tempfile.mkdtemp(), "config")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_unknown_flag(self):
        self.assertOneLineError(run("--no-such-flag"), "--no-such-flag")

    def test_bad_flag_value(self):
        self.assertOneLineError(run("--upstream", "http://127.0.0.1:1", "--log-format", "xml"), "log-format")

    def test_bad_request_filter_pattern(self):
        self.assertOneLineError(run("--upstream", "http://127.0.0.1:1", "--reject-paths", "^/api/(v1"),
                                "--reject-paths", "^/api/(v1", "not a regular expression")

    def test_malformed_kubeconfig(self):
        path = self.kubeconfig("clusters: [ {name: a, cluster: {server: ")
        self.assertOneLineError(run("--kubeconfig", path), path)

    def test_missing_context(self):
        path = self.kubeconfig("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"
                               "current-context: nowhere\n")
        self.assertOneLineError(run("--kubeconfig", path), "nowhere")

    def test_exec_plugin_is_named_as_unsupported(self):
        path = self.kubeconfig(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n"
            "contexts:\n- name: c\n  context: {cluster: c, user: u}\n"
            "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
            "      command: aws-iam-authenticator\n")
        self.assertOneLineError(run("--kubeconfig", path), "exec", "aws-iam-authenticator")

    def test_unreadable_config_file(self):
        self.assertOneLineError(run("--config", "/nonexistent/kcp.yaml"), "/nonexistent/kcp.yaml")

    def test_no_upstream_anywhere(self):
        self.assertOneLineError(run())

    def test_port_in_use_says_what_to_do(self):
        """Issue 19: one line with what is wrong and what to do."""
        import socket
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        held.listen()
        self.addCleanup(held.close)
        r = run("--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:%d" % held.getsockname()[1])
        self.assertNotEqual(r.returncode, 0)
        lines = [l for l in r.stderr.splitlines() if "cannot listen" in l]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("Address already in use (another process holds it: stop it or pick another address with --listen)",
                      lines[0])

    def test_unreachable_upstream_says_what_to_check(self):
        proc = subprocess.Popen([harness.PROXY_BIN, "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stderr.readline()
            while line and "discovery failed" not in line:
                line = proc.stderr.readline()
        finally:
            proc.terminate()
            proc.wait(10)
            proc.stderr.close()
        self.assertIn("discovery failed: GET http://127.0.0.1:1/api: no answer", line)
        self.assertIn("check that the apiserver runs at this address (--upstream, or the kubeconfig's server)", line)

    def test_help_and_version_exit_zero(self):
        h = run("--help")
        self.assertEqual(h.returncode, 0)
        self.assertIn("--listen", h.stdout)
        v = run("--version")
        self.assertEqual(v.returncode, 0)
        self.assertRegex(v.stdout, r"^kube-cache-proxy \d+\.\d+\.\d+")


if __name__ == "__main__":
    unittest.main()
