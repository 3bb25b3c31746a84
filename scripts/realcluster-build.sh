#!/usr/bin/env bash
# Builds the real control plane under the tests (kube-apiserver, etcd, kube-controller-manager,
# kube-scheduler, kubectl) and the Go test clients from the Go module tests/realcluster, once per
# machine: the module and build caches and the binaries live under ~/.cache/kube-cache-proxy,
# the binaries in a folder named by the Kubernetes version, stamped with a hash of the module's
# sources, so a second run costs seconds. Prints that folder on stdout (the last line).
#
#   KCP_GO_CACHE=DIR   the cache root (default ~/.cache/kube-cache-proxy)
set -euo pipefail
cd "$(dirname "$0")/../tests/realcluster"

# The machine's Go (1.26) lives in /usr/local/go; a non-interactive shell may not have it on PATH.
command -v go >/dev/null || export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "realcluster-build: no go (the machine provides Go 1.26 in /usr/local/go)" >&2; exit 1; }
cache=${KCP_GO_CACHE:-$HOME/.cache/kube-cache-proxy}
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build" GOFLAGS=-mod=readonly GOTOOLCHAIN=local
export CGO_ENABLED=0

version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' go.mod)
[ -n "$version" ] || version=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' go.mod)
hash=$( (cat go.mod go.sum; find . -name '*.go' | sort | xargs cat) | sha256sum | cut -c1-12)
bin="$cache/realcluster/$version"
if [ "$(cat "$bin/.built-from" 2>/dev/null)" = "$hash" ]; then
  echo "$bin"
  exit 0
fi

start=$(date +%s)
echo "building the control plane $version into $bin (first build on this machine: minutes)" >&2
mkdir -p "$bin"
rm -f "$bin/.built-from"
minor=${version#v1.}; minor=${minor%%.*}
# The version a server reports (kubectl version, /version) is set at link time, as the
# Kubernetes release build does.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
go build -ldflags "$ldflags" -o "$bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl ./cmd/...
echo "$hash" >"$bin/.built-from"
echo "control plane built in $(( $(date +%s) - start )) s" >&2
echo "$bin"
