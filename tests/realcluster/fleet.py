"""A fleet of kubemark hollow nodes (the real kubelet and kube-proxy code with a fake container
runtime: tests/realcluster/hollownode, built by `scripts/realcluster-build.sh kubemark`) against
a ControlPlane, directly or through the proxy in gateway mode, each kubelet with its own node
identity: a client certificate for `system:node:NAME` in `system:nodes`, signed by the
apiserver's client CA, which the gateway trusts too (`--client-ca-file`) and impersonates
upstream, so the Node authorizer and NodeRestriction see what they see from real kubelets.
Each kube-proxy is `system:kube-proxy`, the user Kubernetes' default ClusterRoleBinding
`system:node-proxier` names (as kube-up's clusters run it).

Every server binds 127.0.0.1: a hollow kubelet's server listens on a port chosen here, with no
read-only port; a hollow kube-proxy serves nothing. Each hollow kubelet holds 2 inotify
instances: `InotifyInstances` raises `fs.inotify.max_user_instances` for a large fleet and
restores the old value. Processes are stopped by PID.

Used by test_real_node_fleet.py and bench_fleet.py (the workload: workload.py); by hand:
    python3 fleet.py --nodes 20 [--gateway]     # a control plane, the fleet, until Ctrl-C
"""
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import realcluster
import workload

import harness

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
INOTIFY = "/proc/sys/fs/inotify/max_user_instances"
# What the gateway caches for a fleet: what kubelets and kube-proxies list and watch (each
# kubelet watches its PodCertificateRequests by spec.nodeName, certificates.k8s.io/v1 in 1.37).
FLEET_CACHE = ("pods,nodes,services,endpointslices.discovery.k8s.io,configmaps,secrets,"
               "runtimeclasses.node.k8s.io,csidrivers.storage.k8s.io,servicecidrs.networking.k8s.io,"
               "podcertificaterequests.certificates.k8s.io")


def build_hollownode():
    """The hollownode binary, built once per machine (minutes the first time)."""
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "realcluster-build.sh"), "kubemark"],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise AssertionError("building kubemark failed:\n%s" % r.stderr[-3000:])
    return os.path.join(r.stdout.strip().splitlines()[-1], "hollownode")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClientCerts:
    """Client certificates signed by the control plane's CA (the apiserver's client CA)."""

    def __init__(self, plane, directory):
        self.ca, self.ca_key, self.dir = plane.ca, os.path.join(plane.dir, "ca.key"), directory
        with open(os.path.join(directory, "client.ext"), "w") as f:
            f.write("extendedKeyUsage=clientAuth\n")

    def issue(self, name, user, groups=()):
        """(certificate, key) paths for `user` in `groups`."""
        key, csr, crt = (os.path.join(self.dir, name + ext) for ext in (".key", ".csr", ".crt"))
        subject = "".join("/O=" + g for g in groups) + "/CN=" + user
        subprocess.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", key, "-out", csr, "-subj", subject], check=True, capture_output=True)
        subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key,
                        "-CAcreateserial", "-CAserial", os.path.join(self.dir, "ca.srl"), "-out", crt, "-days", "2",
                        "-extfile", os.path.join(self.dir, "client.ext")], check=True, capture_output=True)
        return crt, key


def listening_addresses(pids):
    """The "address:port" of every TCP socket the processes `pids` listen on."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir("/proc/%d/fd" % pid):
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in list(f)[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                    address, port = fields[1].split(":")
                    raw = bytes.fromhex(address)
                    ip = socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6,
                                          b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)))
                    out.append("%s:%d" % (ip, int(port, 16)))
    return out


def apiserver_command_line(plane):
    """The arguments kube-apiserver runs with."""
    with open(os.path.join(plane.dir, "kube-apiserver.pid")) as f:
        pid = int(f.read())
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read().decode().split("\0")


def write_kubeconfig(path, server, server_ca, cert, key):
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n"
                "    certificate-authority: %s\nusers:\n- name: u\n  user:\n    client-certificate: %s\n"
                "    client-key: %s\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
                "current-context: c\n" % (server, server_ca, cert, key))
    return path


def inotify_instances_in_use():
    """inotify instances open on the machine (all users: the tests run as one)."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir("/proc/%s/fd" % pid):
                if os.readlink("/proc/%s/fd/%s" % (pid, fd)) == "anon_inode:inotify":
                    n += 1
        except OSError:
            continue
    return n


class InotifyInstances:
    """Raises fs.inotify.max_user_instances for `kubelets` more hollow kubelets (2 each) when
    the limit would not hold them; `restore` puts the old value back."""

    def __init__(self):
        self.old = None

    def make_room(self, kubelets):
        with open(INOTIFY) as f:
            limit = int(f.read())
        need = inotify_instances_in_use() + 2 * kubelets + 64
        if need > limit:
            if self.old is None:
                self.old = limit
            with open(INOTIFY, "w") as f:
                f.write(str(need))

    def restore(self):
        if self.old is not None:
            with open(INOTIFY, "w") as f:
                f.write(str(self.old))
            self.old = None


class Node:
    """One hollow node: a kubelet and a kube-proxy process, logs in its folder."""

    def __init__(self, name, directory):
        self.name, self.dir, self.procs, self.cert = name, directory, [], None

    def spawn(self, argv, log):
        with open(os.path.join(self.dir, log), "w") as out:
            self.procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                               env=dict(os.environ, TMPDIR=self.dir)))

    def pids(self):
        return [p.pid for p in self.procs if p.poll() is None]

    def exited(self):
        return [(p.args[p.args.index("--morph") + 1], p.returncode) for p in self.procs if p.poll() is not None]


class Fleet:
    """N hollow nodes named PREFIX-I whose kubeconfigs point at `server` (verified with
    `server_ca`): the apiserver or a gateway."""

    def __init__(self, binary, workdir, certs, server, server_ca, prefix):
        self.binary, self.certs, self.server, self.server_ca, self.prefix = binary, certs, server, server_ca, prefix
        self.dir = tempfile.mkdtemp(prefix="fleet-%s-" % prefix, dir=workdir)
        self.nodes, self.marks = [], {}
        proxy_cert = certs.issue(prefix + "-kube-proxy", "system:kube-proxy")
        self.proxy_kubeconfig = write_kubeconfig(os.path.join(self.dir, "kube-proxy.kubeconfig"), server, server_ca,
                                                 *proxy_cert)

    def start(self, n, qps=10, burst=20):
        for i in range(len(self.nodes), len(self.nodes) + n):
            name = "%s-%d" % (self.prefix, i)
            node = Node(name, os.path.join(self.dir, name))
            os.makedirs(node.dir)
            node.cert = self.certs.issue(name, "system:node:" + name, ["system:nodes"])
            kubeconfig = write_kubeconfig(os.path.join(node.dir, "kubelet.kubeconfig"), self.server, self.server_ca,
                                          *node.cert)
            common = [self.binary, "--name", name, "--kube-api-qps", str(qps), "--kube-api-burst", str(burst)]
            node.spawn(common + ["--morph", "kubelet", "--kubeconfig", kubeconfig, "--root-dir",
                                 os.path.join(node.dir, "root"), "--kubelet-port", str(free_port())], "kubelet.log")
            node.spawn(common + ["--morph", "proxy", "--kubeconfig", self.proxy_kubeconfig], "proxy.log")
            self.nodes.append(node)

    def names(self):
        return [n.name for n in self.nodes]

    def request(self, name, path, method="GET", body=None, content_type="application/merge-patch+json"):
        """(status, body) of a request to the fleet's server as node `name`'s kubelet."""
        node = next(n for n in self.nodes if n.name == name)
        context = ssl.create_default_context(cafile=self.server_ca)
        context.load_cert_chain(*node.cert)
        host, port = self.server.rsplit("/", 1)[-1].rsplit(":", 1)
        conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data, headers={"Content-Type": content_type} if data else {})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def pids(self):
        return [pid for n in self.nodes for pid in n.pids()]

    def check_alive(self):
        dead = [(n.name, n.exited()) for n in self.nodes if n.exited()]
        if dead:
            raise AssertionError("hollow nodes exited: %s; log: %s" % (dead[:5], self.log_tail(dead[0][0])))

    def log_tail(self, name, which="kubelet.log", chars=3000):
        with open(os.path.join(self.dir, name, which), errors="replace") as f:
            return f.read()[-chars:]

    def stop(self):
        procs = [p for n in self.nodes for p in n.procs if p.poll() is None]
        for p in procs:
            p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def mark(self):
        """From now on `errors(since_mark=True)` counts only what the logs get after this."""
        self.marks = {}
        for node in self.nodes:
            for which in ("kubelet", "proxy"):
                path = os.path.join(node.dir, which + ".log")
                self.marks[path] = os.path.getsize(path)

    def errors(self, since_mark=False):
        """{(component, kind): (count, a message of that kind)} of every klog error line
        ("E" severity) the fleet logged (kind: error_kind)."""
        out = {}
        for node in self.nodes:
            for which in ("kubelet", "proxy"):
                path = os.path.join(node.dir, which + ".log")
                with open(path, errors="replace") as f:
                    f.seek(self.marks.get(path, 0) if since_mark else 0)
                    for line in f:
                        if re.match(r"E\d{4} ", line):
                            message = mask(line.split("] ", 1)[-1], node.name)
                            key = (which, error_kind(message))
                            out[key] = (out.get(key, (0, message))[0] + 1, message)
        return out


def mask(message, node):
    """A log message with what differs between nodes and runs masked."""
    message = message.replace(node, "NODE").strip()
    message = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UID", message)
    message = re.sub(r"127\.0\.0\.1:\d+", "ADDR", message)
    message = re.sub(r"density-[a-z0-9]+-[a-z0-9]+", "POD", message)
    return re.sub(r"\d+(\.\d+)?(ms|s|µs)?", "N", message)


# What an error says about the API server it talks to: what a gateway could change.
ERROR_CLASSES = (("forbidden", ("forbidden", "Forbidden")), ("unauthorized", ("Unauthorized", "unauthorized")),
                 ("not found", ("not found", "NotFound")), ("conflict", ("conflict", "modified")),
                 ("too many requests", ("Too many requests", "429", "rate limit")),
                 ("timeout", ("timeout", "Timeout", "deadline", "context canceled")),
                 ("connection", ("EOF", "connection", "stream", "GOAWAY", "tls", "x509")),
                 ("decode", ("decode", "unmarshal", "json", "protobuf")))


def error_kind(message):
    """The call site of a klog error (its message) and the class of its error: startup races
    (the first PLEG relist, a runtime check) reword the same error from run to run, while a
    forbidden, a not found or a broken stream where the direct run has none is a
    difference."""
    text = message.split('" ', 1)[0].strip('"')
    err = message[len(text):]
    classes = [name for name, words in ERROR_CLASSES if any(w in err for w in words)]
    return "%s [%s]" % (text, ",".join(classes) or "other")


def grant_impersonation(plane):
    """The proxy's identity may impersonate users and groups, as the chart grants it when
    clientCA.enabled: a gateway forwards a certificate caller's requests as that caller."""
    a = plane.request("/apis/rbac.authorization.k8s.io/v1/clusterroles", "POST", {
        "metadata": {"name": "kube-cache-proxy-impersonate"},
        "rules": [{"apiGroups": [""], "resources": ["users", "groups"], "verbs": ["impersonate"]}]})
    assert a.status in (201, 409), a.body
    a = plane.request("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "POST", {
        "metadata": {"name": "kube-cache-proxy-impersonate"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "kube-cache-proxy-impersonate"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "kube-cache-proxy"}]})
    assert a.status in (201, 409), a.body


def start_gateway(processes, plane, workdir, *args):
    """The proxy in gateway mode for a fleet: TLS on 127.0.0.1, client certificates of the
    apiserver's client CA, the fleet's resources cached. Returns (process, https URL, CA path)."""
    grant_impersonation(plane)
    pki = harness.make_pki(tempfile.mkdtemp(dir=workdir))
    context = ssl.create_default_context(cafile=pki["ca"])
    px = realcluster.start_proxy(processes, plane, "--mode", "gateway", "--tls-cert-file", pki["server_cert"],
                                 "--tls-private-key-file", pki["server_key"], "--client-ca-file", plane.ca,
                                 "--cache", FLEET_CACHE, "--cache-on-demand=false", *args, who="proxy", tls=context)
    return px, "https://127.0.0.1:%d" % px.port, pki["ca"]


def main():
    import argparse
    import shutil
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--gateway", action="store_true", help="the nodes go through the proxy in gateway mode")
    args = parser.parse_args()
    binary = build_hollownode()
    workdir = tempfile.mkdtemp(prefix="fleet-")
    processes, inotify = harness.Processes(), InotifyInstances()
    fleet = components = None
    try:
        plane = realcluster.ControlPlane(processes, workdir)
        components = workload.Components(plane, workdir)
        server, ca = plane.url, plane.ca
        if args.gateway:
            _, server, ca = start_gateway(processes, plane, workdir)
        inotify.make_room(args.nodes)
        fleet = Fleet(binary, workdir, ClientCerts(plane, workdir), server, ca, "hollow")
        fleet.start(args.nodes)
        start = time.monotonic()
        harness.wait_for(lambda: fleet.check_alive() or len(workload.ready_nodes(plane, "hollow")) == args.nodes,
                         timeout=600, interval=0.5, message="nodes Ready")
        print("%d nodes Ready in %.1f s; admin kubeconfig %s; Ctrl-C ends it" % (
            args.nodes, time.monotonic() - start, plane.kubeconfig()), flush=True)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        if fleet:
            fleet.stop()
        if components:
            components.stop()
        processes.stop_all()
        inotify.restore()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
