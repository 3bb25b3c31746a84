"""The Helm chart, the add-on manifests, the kustomize base and the sidecar example,
rendered by the real helm (v3.17) and kubectl (kustomize) and checked for what an
operator relies on: RBAC is exactly the cached resources, probes and security settings
are there, bad values are refused with a clear message, committed renderings are fresh.
"""
import contextlib
import http.server
import os
import shutil
import subprocess
import threading
import unittest

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHART = os.path.join(ROOT, "helm", "kube-cache-proxy")
DEPLOY = os.path.join(ROOT, "deploy")


def tool(name):
    env = os.environ.get(name.upper())
    if env:
        return env
    local = os.path.join(ROOT, ".tools", "bin", name)
    return local if os.path.exists(local) else shutil.which(name)


HELM = tool("helm")
KUBECTL = tool("kubectl")


def run(*args, check=True):
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def template(*flags):
    out = run(HELM, "template", "kcp", CHART, "--namespace", "infra", *flags).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def rbac_resources(docs):
    """{(group, resource)} granted get/list/watch by the chart's ClusterRole."""
    (role,) = by_kind(docs, "ClusterRole")
    granted = set()
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.add((group, resource, tuple(rule["verbs"])))
    return granted


@unittest.skipUnless(HELM and KUBECTL, "helm and kubectl are installed by scripts/install-deps.sh")
@contextlib.contextmanager
def answering_server(statuses):
    """An HTTP server on a free 127.0.0.1 port answering each path with its status."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(statuses.get(self.path, 404))
            self.end_headers()

        def log_message(self, *args):
            pass
    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


class HelmChartTest(unittest.TestCase):
    def test_lint_strict_passes_with_default_and_non_default_values(self):
        run(HELM, "lint", "--strict", CHART)
        run(HELM, "lint", "--strict", CHART, "--set", "autoscaling.enabled=true", "--set",
            "serviceMonitor.enabled=true", "--set", "stateDir.enabled=true", "--set", "networkPolicy.enabled=false")

    def test_default_rendering_has_the_expected_objects(self):
        kinds = sorted(d["kind"] for d in template())
        self.assertEqual(kinds, sorted(["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "NetworkPolicy",
                                        "PodDisruptionBudget", "Service", "ServiceAccount"]))

    def test_rbac_grants_read_on_exactly_the_cached_resources(self):
        docs = template("--set", "cache.resources={pods,deployments.apps,widgets.example.com}")
        read = ("get", "list", "watch")
        self.assertEqual(rbac_resources(docs), {
            ("", "pods", read), ("apps", "deployments", read), ("example.com", "widgets", read),
            # Discovery is served from memory while these are watched unchanged.
            ("apiextensions.k8s.io", "customresourcedefinitions", read),
            ("apiregistration.k8s.io", "apiservices", ("list", "watch")),
            # Gateway mode reviews every caller (docs/security.md).
            ("authentication.k8s.io", "tokenreviews", ("create",)),
            ("authorization.k8s.io", "subjectaccessreviews", ("create",)),
        })
        # Nothing the operator did not list, secrets above all.
        self.assertNotIn("secrets", str(by_kind(docs, "ClusterRole")))

    def test_gateway_serves_tls_and_impersonates_only_for_client_certificates(self):
        docs = template()
        (cm,) = by_kind(docs, "ConfigMap")
        config = yaml.safe_load(cm["data"]["config.yaml"])
        self.assertEqual(config["tls-cert-file"], "/etc/kube-cache-proxy/tls/tls.crt")
        self.assertEqual(config["tls-private-key-file"], "/etc/kube-cache-proxy/tls/tls.key")
        self.assertNotIn("client-ca-file", config)
        self.assertEqual(config["authorization-cache-ttl"], "10s")
        (deploy,) = by_kind(docs, "Deployment")
        spec = deploy["spec"]["template"]["spec"]
        self.assertIn({"name": "tls", "secret": {"secretName": "kcp-kube-cache-proxy-tls"}}, spec["volumes"])
        (container,) = spec["containers"]
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            self.assertEqual(container[probe]["httpGet"]["scheme"], "HTTPS")
        self.assertNotIn("impersonate", str(by_kind(docs, "ClusterRole")))

        docs = template("--set", "clientCA.enabled=true", "--set", "tls.secretName=my-tls")
        (cm,) = by_kind(docs, "ConfigMap")
        self.assertEqual(yaml.safe_load(cm["data"]["config.yaml"])["client-ca-file"],
                         "/etc/kube-cache-proxy/client-ca/ca.crt")
        (deploy,) = by_kind(docs, "Deployment")
        self.assertIn({"name": "tls", "secret": {"secretName": "my-tls"}}, deploy["spec"]["template"]["spec"]["volumes"])
        self.assertIn(("", "users", ("impersonate",)), rbac_resources(docs))
        self.assertIn(("", "groups", ("impersonate",)), rbac_resources(docs))

    def test_the_config_file_lists_the_cached_and_denied_resources(self):
        docs = template("--set", "cache.resources={pods,configmaps}", "--set", "cache.deny={secrets}",
                        "--set", "cache.writeSync=true", "--set", "logFormat=text")
        (cm,) = by_kind(docs, "ConfigMap")
        config = yaml.safe_load(cm["data"]["config.yaml"])
        self.assertEqual(config["cache"], ["pods", "configmaps"])
        self.assertEqual(config["no-cache"], ["secrets"])
        self.assertEqual(config["mode"], "gateway")
        self.assertIs(config["write-sync"], True)
        self.assertEqual(config["log-format"], "text")
        self.assertEqual(config["listen"], "0.0.0.0:8001")

    def test_the_config_file_carries_the_watch_options(self):
        (cm,) = by_kind(template(), "ConfigMap")
        config = yaml.safe_load(cm["data"]["config.yaml"])
        self.assertEqual((config["watch-bookmark-interval"], config["watch-max-lifetime"],
                          config["watch-queue-capacity"]), ("60s", "1h", 1000))
        docs = template("--set", "watch.bookmarkInterval=30s", "--set", "watch.maxLifetime=1h30m",
                        "--set", "watch.queueCapacity=200")
        (cm,) = by_kind(docs, "ConfigMap")
        config = yaml.safe_load(cm["data"]["config.yaml"])
        self.assertEqual((config["watch-bookmark-interval"], config["watch-max-lifetime"],
                          config["watch-queue-capacity"]), ("30s", "1h30m", 200))

    def test_deployment_probes_and_security_context(self):
        (deploy,) = by_kind(template(), "Deployment")
        spec = deploy["spec"]["template"]["spec"]
        self.assertTrue(spec["securityContext"]["runAsNonRoot"])
        (container,) = spec["containers"]
        self.assertEqual(container["livenessProbe"]["httpGet"]["path"], "/livez")
        self.assertEqual(container["readinessProbe"]["httpGet"]["path"], "/readyz?exclude=upstream")
        self.assertTrue(container["securityContext"]["readOnlyRootFilesystem"])
        self.assertFalse(container["securityContext"]["allowPrivilegeEscalation"])
        self.assertEqual(container["securityContext"]["capabilities"]["drop"], ["ALL"])
        self.assertIn("--config=/etc/kube-cache-proxy/config.yaml", container["args"])
        keys = [c["topologyKey"] for c in spec["topologySpreadConstraints"]]
        self.assertEqual(keys, ["kubernetes.io/hostname", "topology.kubernetes.io/zone"])
        self.assertEqual(deploy["spec"]["replicas"], 2)

    def test_optional_objects_appear_when_enabled(self):
        docs = template("--set", "autoscaling.enabled=true", "--set", "serviceMonitor.enabled=true",
                        "--set", "stateDir.enabled=true", "--set", "podDisruptionBudget.enabled=false",
                        "--set", "networkPolicy.enabled=false", "--set", "extraArgs={--v=2}")
        kinds = {d["kind"] for d in docs}
        self.assertIn("HorizontalPodAutoscaler", kinds)
        self.assertIn("ServiceMonitor", kinds)
        self.assertNotIn("PodDisruptionBudget", kinds)
        self.assertNotIn("NetworkPolicy", kinds)
        (deploy,) = by_kind(docs, "Deployment")
        # The HPA owns the replica count.
        self.assertNotIn("replicas", deploy["spec"])
        (container,) = deploy["spec"]["template"]["spec"]["containers"]
        self.assertIn("--v=2", container["args"])
        self.assertIn("/var/lib/kube-cache-proxy", [m["mountPath"] for m in container["volumeMounts"]])
        (cm,) = by_kind(docs, "ConfigMap")
        config = yaml.safe_load(cm["data"]["config.yaml"])
        # A folder the proxy creates 0700 in the volume; no key unless a Secret is named.
        self.assertEqual(config["state-dir"], "/var/lib/kube-cache-proxy/state")
        self.assertNotIn("state-key-file", config)
        # Saved state names its cluster: reading kube-system's UID is granted, nothing more.
        (role,) = by_kind(docs, "ClusterRole")
        self.assertIn({"apiGroups": [""], "resources": ["namespaces"], "resourceNames": ["kube-system"], "verbs": ["get"]},
                      role["rules"])

    def test_state_dir_on_a_persistent_volume_claim_and_drift_checks(self):
        docs = template("--set", "stateDir.enabled=true", "--set", "stateDir.persistentVolumeClaim=kcp-state",
                        "--set", "stateDir.saveInterval=5m", "--set", "cache.driftCheckInterval=10m")
        (deploy,) = by_kind(docs, "Deployment")
        volumes = {v["name"]: v for v in deploy["spec"]["template"]["spec"]["volumes"]}
        self.assertEqual(volumes["state"]["persistentVolumeClaim"], {"claimName": "kcp-state"})
        self.assertNotIn("emptyDir", volumes["state"])
        (cm,) = by_kind(docs, "ConfigMap")
        config = yaml.safe_load(cm["data"]["config.yaml"])
        self.assertEqual(config["state-save-interval"], "5m")
        self.assertEqual(config["drift-check-interval"], "10m")
        self.assertNotIn("state-key", volumes)

    def test_state_sealed_with_a_key_from_a_secret(self):
        docs = template("--set", "stateDir.enabled=true", "--set", "stateDir.keySecret=kcp-state-key")
        (deploy,) = by_kind(docs, "Deployment")
        volumes = {v["name"]: v for v in deploy["spec"]["template"]["spec"]["volumes"]}
        self.assertEqual(volumes["state-key"]["secret"]["secretName"], "kcp-state-key")
        (container,) = deploy["spec"]["template"]["spec"]["containers"]
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        self.assertTrue(mounts["state-key"]["readOnly"])
        (cm,) = by_kind(docs, "ConfigMap")
        config = yaml.safe_load(cm["data"]["config.yaml"])
        self.assertEqual(config["state-key-file"], mounts["state-key"]["mountPath"] + "/key")

    def test_bad_values_are_refused_with_a_message_naming_the_value(self):
        cases = [
            (["--set", "replicaCount=0"], "replicaCount"),
            (["--set", "cache.resources={Pods}"], "cache.resources.0"),
            (["--set", "mode=sidecar"], "mode"),
            (["--set", "listen.port=80"], "listen.port"),
            (["--set", "logFormat=xml"], "logFormat"),
            (["--set", "cache.driftCheckInterval=often"], "cache.driftCheckInterval"),
            (["--set", "extraArgs={v=2}"], "extraArgs.0"),
            (["--set", "unknownKey=1"], "unknownKey"),
            (["--set", "watch.queueCapacity=0"], "watch.queueCapacity"),
            (["--set", "watch.maxLifetime=soon"], "watch.maxLifetime"),
            (["--set", "cache.resources={pods}", "--set", "cache.deny={pods}"], "both list \"pods\""),
        ]
        for flags, needle in cases:
            with self.subTest(flags=flags):
                proc = run(HELM, "template", "kcp", CHART, *flags, check=False)
                self.assertNotEqual(proc.returncode, 0)
                self.assertIn(needle, proc.stderr)


@unittest.skipUnless(HELM and KUBECTL, "helm and kubectl are installed by scripts/install-deps.sh")
class ManifestsTest(unittest.TestCase):
    def test_committed_addon_manifests_match_a_fresh_chart_rendering(self):
        fresh = run(HELM, "template", "kube-cache-proxy", CHART, "--namespace", "kube-cache-proxy").stdout
        with open(os.path.join(DEPLOY, "addon", "kube-cache-proxy.yaml")) as f:
            committed = f.read()
        self.assertIn(fresh, committed, "deploy/addon is stale: run scripts/render-manifests.sh")

    def test_kustomize_base_and_overlay_render(self):
        base = [d for d in yaml.safe_load_all(run(KUBECTL, "kustomize", os.path.join(DEPLOY, "addon")).stdout) if d]
        self.assertIn("Namespace", {d["kind"] for d in base})
        for doc in base:
            if doc["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
                self.assertEqual(doc["metadata"]["namespace"], "kube-cache-proxy", doc["kind"])
        overlay = [d for d in yaml.safe_load_all(
            run(KUBECTL, "kustomize", os.path.join(DEPLOY, "overlays", "example")).stdout) if d]
        (deploy,) = by_kind(overlay, "Deployment")
        self.assertEqual(deploy["spec"]["replicas"], 3)

    def test_sidecar_example_runs_the_proxy_on_loopback_as_a_native_sidecar(self):
        with open(os.path.join(DEPLOY, "sidecar", "controller-with-sidecar.yaml")) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        (deploy,) = by_kind(docs, "Deployment")
        spec = deploy["spec"]["template"]["spec"]
        (proxy,) = spec["initContainers"]
        self.assertEqual(proxy["restartPolicy"], "Always")
        self.assertIn("--listen=127.0.0.1:8001", proxy["args"])
        # The probes run in the pod (the kubelet's httpGet would dial the node's loopback):
        # each command succeeds exactly when its path answers 200 on 127.0.0.1:8001.
        for probe, path in (("startupProbe", "/readyz"), ("livenessProbe", "/livez")):
            command = proxy[probe]["exec"]["command"]
            self.assertIn("/dev/tcp/127.0.0.1/8001", command[2])
            for healthy in (True, False):
                with answering_server({path: 200 if healthy else 503}) as port:
                    dialled = [c.replace("/8001", "/%d" % port) for c in command]
                    self.assertEqual(subprocess.run(dialled).returncode == 0, healthy, (probe, healthy))
        (controller,) = spec["containers"]
        self.assertIn("--server=http://127.0.0.1:8001", controller["args"])
        # The proxy's cached resources are readable by the pod's identity.
        (role,) = by_kind(docs, "ClusterRole")
        readable = {r for rule in role["rules"] if "watch" in rule["verbs"] for r in rule["resources"]}
        cached = next(a for a in proxy["args"] if a.startswith("--cache=")).split("=", 1)[1].split(",")
        self.assertTrue(set(cached) <= readable)


if __name__ == "__main__":
    unittest.main()
