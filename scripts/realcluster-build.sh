#!/usr/bin/env bash
# Builds the real control plane under the tests (kube-apiserver, etcd, kube-controller-manager,
# kube-scheduler, kubectl) and the Go test clients from the Go module tests/realcluster, once per
# machine: the module and build caches and the binaries live under ~/.cache/kube-cache-proxy,
# the binaries in a folder named by the Kubernetes version, stamped with a hash of the module's
# sources, so a second run costs seconds. Prints that folder on stdout (the last line).
#
#   bash scripts/realcluster-build.sh            the control plane and the Go test clients
#   bash scripts/realcluster-build.sh kubemark   kubemark alone (hollow nodes: the real kubelet
#                                                and kube-proxy with a fake runtime), into the
#                                                same folder, stamped by its own module's files
#   KCP_GO_CACHE=DIR   the cache root (default ~/.cache/kube-cache-proxy)
set -euo pipefail
what=${1:-controlplane}
cd "$(dirname "$0")/../tests/realcluster"

# The machine's Go (1.26) lives in /usr/local/go; a non-interactive shell may not have it on PATH.
command -v go >/dev/null || export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "realcluster-build: no go (the machine provides Go 1.26 in /usr/local/go)" >&2; exit 1; }
cache=${KCP_GO_CACHE:-$HOME/.cache/kube-cache-proxy}
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOFLAGS=-mod=readonly GOTOOLCHAIN=local
export CGO_ENABLED=0

version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' go.mod)
[ -n "$version" ] || version=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' go.mod)
bin="$cache/realcluster/$version"
minor=${version#v1.}; minor=${minor%%.*}
# The version a server reports (kubectl version, /version) is set at link time, as the
# Kubernetes release build does.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

case "$what" in
controlplane)
  stamp="$bin/.built-from"
  hash=$( (cat go.mod go.sum; find . -path ./hollownode -prune -o -name '*.go' -print | sort | xargs cat) |
         sha256sum | cut -c1-12)
  pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
        k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl ./cmd/...) ;;
kubemark)
  # kubemark's hollow node with its servers on loopback (hollownode/main.go), a module of its
  # own: its dependencies (the kubelet's, kube-proxy's) stay out of the control plane's go.sum,
  # and a change to either build leaves the other alone.
  cd hollownode
  stamp="$bin/.hollownode-built-from"
  hash=$( (cat go.mod go.sum main.go) | sha256sum | cut -c1-12)
  pkgs=(.) ;;
*)
  echo "usage: $0 [controlplane|kubemark]" >&2; exit 2 ;;
esac
if [ "$(cat "$stamp" 2>/dev/null)" = "$hash" ]; then
  echo "$bin"
  exit 0
fi

start=$(date +%s)
echo "building $what $version into $bin (first build on this machine: minutes)" >&2
mkdir -p "$bin"
rm -f "$stamp"
# At most two packages at a time: the machine has 2 cores, shared.
out="$bin/"
[ "$what" = kubemark ] && out="$bin/hollownode"
go build -p 2 -ldflags "$ldflags" -o "$out" "${pkgs[@]}"
echo "$hash" >"$stamp"
echo "$what built in $(( $(date +%s) - start )) s" >&2
echo "$bin"
