#!/usr/bin/env bash
# Threads, RSS and descriptors of the proxy with N per-namespace pod informers (the 403
# fallback's worst case) against one cluster-wide informer of the same pods.
#   bash tests/bench/threads_per_informer.sh BIN_DIR OUT_FILE [N=500]
set -euo pipefail
bin=$1; out=$2; n=${3:-500}
d=$(mktemp -d)
$bin/kube-test-apiserver --enable-control --listen 127.0.0.1:0 >$d/api.log 2>&1 & api=$!
trap 'kill $api ${px:-} 2>/dev/null || true; rm -rf "$d"' EXIT
for i in $(seq 100); do grep -q 'listening on' $d/api.log && break; sleep 0.1; done
addr=$(grep -o 'listening on [0-9.:]*' $d/api.log | awk '{print $3}')
curl -sf -XPOST "http://$addr/control/load?resource=pods&count=$((n*2))&namespaces=$n&nodes=10" >/dev/null
{ echo "resources:"; echo "  - resource: pods"; printf "    namespaces: ["; for i in $(seq 0 $((n-1))); do printf "load-$i"; [ $i -lt $((n-1)) ] && printf ", "; done; echo "]"; } >$d/per-ns.yaml
measure() {
  local label=$1 want=$2; shift 2
  $bin/kube-cache-proxy --upstream http://$addr --listen 127.0.0.1:0 --cache pods --cache-on-demand=false "$@" >$d/px.log 2>&1 & px=$!
  local synced=0 port=""
  for i in $(seq 600); do
    port=$(grep -o 'listening on [0-9.:]*' $d/px.log | head -1 | awk -F: '{print $NF}') || true
    if [ -n "$port" ]; then
      # grep -c reads the whole page (grep -q would cut curl off, which pipefail reports).
      synced=$(curl -s "http://127.0.0.1:$port/metrics" | grep -c '^kube_cache_proxy_cache_synced.* 1$' || true)
      [ "$synced" -ge "$want" ] && break
    fi
    sleep 0.2
  done
  # Reported either way: the relist limiter starts informers at 2/s after a burst of 5, so
  # 500 take minutes to sync; threads and sockets exist from the start.
  sleep 1
  echo "$label informers_synced=$synced/$want after=$((i / 5))s threads=$(awk '/^Threads/{print $2}' /proc/$px/status) rss_kib=$(awk '/^VmRSS/{print $2}' /proc/$px/status) fds=$(ls /proc/$px/fd | wc -l)" >>$out
  kill $px; wait $px 2>/dev/null || true; px=
}
measure "cluster-wide" 1
measure "per-namespace($n)" $n --config $d/per-ns.yaml
