#!/usr/bin/env bash
# Runs every test: installs what is missing, builds (optimised and ASan+UBSan), runs
# CTest in both builds, then runs each fuzz target briefly. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

bash scripts/install-deps.sh
export PATH="$root/.tools/bin:$PATH"          # kubectl and helm from the install step
export KUBECTL="$root/.tools/bin/kubectl"
jobs=$(nproc)

step() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "build: release"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"

step "test: release"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 600)

step "build: asan+ubsan"
# The sanitizers watch the proxy; its tests reuse the release build's test apiserver,
# whose own unit and smoke tests ran above.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKCP_SANITIZE=ON -DKCP_BENCH=OFF \
  -DKCP_TEST_APISERVER="$root/build/bin/kube-test-apiserver" >/dev/null
cmake --build build-asan -j"$jobs"

step "test: asan+ubsan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j"$jobs" --timeout 900)

step "fuzz: libFuzzer targets, ASan+UBSan, 10 s each"
# A clang build of only the parsers and the fuzz binaries (build-fuzz); each target
# starts from its seed corpus (docs/fuzzing.md). The replay tests above ran the seeds.
bash scripts/fuzz.sh --seconds 10

step "all tests passed"
