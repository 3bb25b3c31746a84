#!/usr/bin/env bash
# A real Kubernetes control plane on 127.0.0.1: etcd and kube-apiserver built from the Go
# modules (scripts/realcluster-build.sh), with generated PKI, RBAC + Node authorization,
# test identities, the Widget CRD and the sample data.
#
#   bash scripts/real-apiserver.sh start DIR   starts it; prints the URL once ready and loaded
#   bash scripts/real-apiserver.sh stop DIR    ends everything it started, by PID
#
# DIR then holds url, admin.kubeconfig, limited.kubeconfig (namespace "limited" only),
# nobody.kubeconfig, proxy.kubeconfig (the proxy's identity), controller-manager.kubeconfig,
# scheduler.kubeconfig, control (the control endpoints: POST /restart-apiserver, /compact,
# /churn?nodes=N&events=R, /churn/stop; GET /revision), logs and PID files.
# Background churn like a real cluster's: curl -X POST "$(cat DIR/control)/churn?nodes=100&events=2"
# KCP_FEATURE_GATES, when set, is kube-apiserver's --feature-gates (alpha features such as
# KCP_FEATURE_GATES=ShardedListAndWatch=true).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

case "$cmd" in
start)
  bin=$(bash "$root/scripts/realcluster-build.sh" | tail -1)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  rm -f "$dir/url" "$dir/control"
  gates=()
  [ -n "${KCP_FEATURE_GATES:-}" ] && gates=(--feature-gates "$KCP_FEATURE_GATES")
  setsid "$bin/controlplane" --dir "$dir" --bin "$bin" "${gates[@]}" >"$dir/controlplane.out" 2>"$dir/controlplane.log" </dev/null &
  echo $! >"$dir/controlplane.pid"
  for _ in $(seq 1 1800); do
    if grep -q '^listening on' "$dir/controlplane.out" 2>/dev/null; then
      cat "$dir/url"
      exit 0
    fi
    if ! kill -0 "$(cat "$dir/controlplane.pid")" 2>/dev/null; then
      echo "the control plane exited; its log:" >&2
      tail -20 "$dir/controlplane.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "the control plane did not become ready in 180 s ($dir/controlplane.log)" >&2
  exit 1
  ;;
stop)
  [ -d "$dir" ] || exit 0
  if [ -f "$dir/controlplane.pid" ]; then
    pid=$(cat "$dir/controlplane.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/controlplane.pid"
  fi
  # The children die with the control plane (parent-death signal); these are in case it
  # was killed before it could stop them.
  for f in "$dir/kube-apiserver.pid" "$dir/etcd.pid"; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
