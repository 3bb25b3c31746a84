#!/usr/bin/env bash
# Proxy CPU per 1,000 cached GETs of one pod (RV=0), counted over the proxy's own threads,
# for an A/B of two builds run alternately on one machine (docs/benchmarks.md, issue 17):
#   for i in 1 2 3; do for b in OLD/bin NEW/bin; do bash tests/bench/get_cpu_per_request.sh $b; done; done
# Load: 10,000 pods, a 5 s LIST warm-up, a 2 s GET warm-up, then wrk -t2 -c64 for 6 s.
set -euo pipefail
bin=$1
d=$(mktemp -d)
$bin/kube-test-apiserver --enable-control --listen 127.0.0.1:0 >$d/api.log 2>&1 & api=$!
trap 'kill $api ${px:-} 2>/dev/null || true; rm -rf "$d"' EXIT
for i in $(seq 100); do grep -q 'listening on' $d/api.log && break; sleep 0.1; done
addr=$(grep -o 'listening on [0-9.:]*' $d/api.log | awk '{print $3}')
curl -sf -XPOST "http://$addr/control/load?resource=pods&count=10000&namespaces=10&nodes=50" >/dev/null
$bin/kube-cache-proxy --upstream http://$addr --listen 127.0.0.1:0 --cache pods >$d/px.log 2>&1 & px=$!
port=""
for i in $(seq 300); do
  port=$(grep -o 'listening on [0-9.:]*' $d/px.log | head -1 | awk -F: '{print $NF}') || true
  [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
  sleep 0.1
done
base="http://127.0.0.1:$port"
name=$(curl -sf "$base/api/v1/pods?limit=1&resourceVersion=0" |
  /usr/bin/python3 -c 'import json,sys; m=json.load(sys.stdin)["items"][0]["metadata"]; print(m["namespace"]+"/pods/"+m["name"])')
url="$base/api/v1/namespaces/$name?resourceVersion=0"
ticks() { local t=0; for f in /proc/$px/task/*/stat; do t=$((t + $(cut -d')' -f2 $f | awk '{print $12+$13}'))); done; echo $t; }
wrk -t1 -c1 -d5s "$base/api/v1/pods?resourceVersion=0" >/dev/null
wrk -t2 -c64 -d2s "$url" >/dev/null
before=$(ticks)
requests=$(wrk -t2 -c64 -d6s "$url" | awk '/requests in/{print $1}')
after=$(ticks)
hz=$(getconf CLK_TCK)
/usr/bin/python3 -c "import sys; r=$requests; s=($after-$before)/$hz; print('%s: %d requests in 6 s, proxy CPU %.4f s per 1,000 GETs' % (sys.argv[1], r, s/r*1000))" "$bin"
