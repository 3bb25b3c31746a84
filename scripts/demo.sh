#!/usr/bin/env bash
# The main job on its embedded default: installs what is missing, builds, starts the
# bundled test apiserver loaded with sample objects, starts kube-cache-proxy in front
# of it, and shows kubectl working through the proxy URL. Both keep running so you
# can try it; `bash scripts/demo.sh stop` ends them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
state="$root/.demo"
upstream_port=${DEMO_UPSTREAM_PORT:-18443}
proxy_listen=${DEMO_PROXY_LISTEN:-127.0.0.1:8001}

stop() {
  for f in "$state"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null && echo "stopped $(basename "$f" .pid) (pid $pid)"
    rm -f "$f"
  done
}
if [ "${1:-}" = "stop" ]; then stop; exit 0; fi

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target kube-cache-proxy kube-test-apiserver
mkdir -p "$state"
stop >/dev/null

wait_for() {  # wait_for URL: until it answers, at most 15 s
  for _ in $(seq 150); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "demo: $1 did not come up; see $state/*.log" >&2; exit 1
}

# --enable-control: its request and watch counters show what reached it (demo_story.py).
build/bin/kube-test-apiserver --listen "127.0.0.1:$upstream_port" --sample-data --enable-control >"$state/apiserver.log" 2>&1 &
echo $! >"$state/apiserver.pid"
wait_for "http://127.0.0.1:$upstream_port/healthz"

build/bin/kube-cache-proxy --listen "$proxy_listen" --upstream "http://127.0.0.1:$upstream_port" --cache pods,configmaps \
  >"$state/proxy.log" 2>&1 &
echo $! >"$state/proxy.pid"
wait_for "http://$proxy_listen/readyz"

cat >"$state/kubeconfig" <<KCFG
apiVersion: v1
kind: Config
clusters:
- name: kube-cache-proxy
  cluster:
    server: http://$proxy_listen
contexts:
- name: kube-cache-proxy
  context:
    cluster: kube-cache-proxy
    user: demo
current-context: kube-cache-proxy
users:
- name: demo
  user: {}
KCFG

kubectl="$root/.tools/bin/kubectl --kubeconfig $state/kubeconfig"
run() { echo; echo "\$ kubectl $*"; $kubectl "$@"; }
run get namespaces
run get pods -A -o wide
run get deployments,configmaps -n default
run get widgets -A
# The first 300 bytes of a paged LIST (read whole first: a pipe into head would make
# kubectl die of SIGPIPE, which pipefail turns into the script's failure).
echo; echo "\$ kubectl get --raw /api/v1/namespaces/demo/pods?limit=1"
raw=$($kubectl get --raw "/api/v1/namespaces/demo/pods?limit=1")
printf '%s ...\n' "${raw:0:300}"
echo
echo "What the proxy saved, measured now:"
echo
/usr/bin/python3 scripts/demo_story.py "http://$proxy_listen" "http://127.0.0.1:$upstream_port"
echo
echo "$(curl -fsS "http://$proxy_listen/metrics" | grep -c '^kube_cache_proxy_') kube_cache_proxy_* metric lines at http://$proxy_listen/metrics"
echo "Status page: http://$proxy_listen/debug/status (a browser), or kubectl get --raw /debug/status"
cat <<MSG

kube-cache-proxy is serving on http://$proxy_listen in front of the test apiserver on 127.0.0.1:$upstream_port.
Try it:   export KUBECONFIG=$state/kubeconfig PATH=$root/.tools/bin:\$PATH; kubectl get pods -A -w
Logs:     $state/proxy.log, $state/apiserver.log
Stop:     bash scripts/demo.sh stop
MSG
