#!/usr/bin/env bash
# Runs every test: installs what is missing, builds the real control plane from the Go
# modules (cached under ~/.cache/kube-cache-proxy: minutes on a new machine, seconds after),
# builds the proxy (optimised and ASan+UBSan), runs CTest in both builds (the optimised one
# also against the real kube-apiserver), the concurrency tests under TSan, then each fuzz
# target briefly. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

bash scripts/install-deps.sh
export PATH="$root/.tools/bin:$PATH"          # kubectl and helm from the install step
export KUBECTL="$root/.tools/bin/kubectl"
jobs=$(nproc)

# Compiler cache outside the work tree, like the Go build's: a clean clone whose sources
# did not change since the last run recompiles nothing (base_dir makes the cache
# independent of where the clone sits). The cold build is what docs/design.md reports.
export CCACHE_DIR=${KCP_CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-cache-proxy/ccache}
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-6G}
# The Debug builds' precompiled test header is cacheable only with these sloppinesses.
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

step() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "build: control plane (Go: kube-apiserver, etcd, controllers, kubectl, test clients)"
realcluster_bin=$(bash scripts/realcluster-build.sh | tail -1)

step "build: hollow nodes (kubemark: the kubelet and kube-proxy with a fake runtime; same cache)"
bash scripts/realcluster-build.sh kubemark >/dev/null

step "build: Java test clients (fabric8 kubernetes-client, client-java; Maven; cached under ~/.cache/kube-cache-proxy/java)"
bash tests/clients/java/build.sh >/dev/null
bash tests/clients/client-java/build.sh >/dev/null

step "build: Rust test client (kube-rs; cargo; cached under ~/.cache/kube-cache-proxy/rust)"
bash tests/clients/rust/build.sh >/dev/null

step "build: release"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCP_DEBUG_LINES_ONLY=ON -DKCP_REALCLUSTER_BIN="$realcluster_bin" "${launcher[@]}" >/dev/null
cmake --build build -j"$jobs"

step "test: release"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 600)

step "build: asan+ubsan"
# The sanitizers watch the proxy; its tests reuse the release build's test apiserver,
# whose own unit and smoke tests ran above. Of the real-cluster tier only the discovery
# test runs here: the discovery cache answers only in front of a real apiserver (CRDs and
# APIServices to watch).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKCP_SANITIZE=ON -DKCP_DEBUG_LINES_ONLY=ON -DKCP_BENCH=OFF \
  -DKCP_TEST_APISERVER="$root/build/bin/kube-test-apiserver" \
  -DKCP_REALCLUSTER_BIN="$realcluster_bin" -DKCP_REALCLUSTER_ONLY=test_real_discovery "${launcher[@]}" >/dev/null
cmake --build build-asan -j"$jobs"

step "test: asan+ubsan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j"$jobs" --timeout 900)

step "build: tsan"
# ThreadSanitizer over the code whose data crosses threads: the store (one writer, many
# readers), the watch fan-out (reflector thread to io threads), the informer manager, the
# reflector over HTTP, the watch limiter, and the cached-watch server end to end. Only what
# those tests need is built (no test apiserver, fuzz or bench targets), at -O0.
tsan_tests=(cache_unit_tests watch_unit_tests informer_unit_tests upstream_lister_watcher_tests proxy_unit
  integration_test_cached_watch integration_test_relist)
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKCP_TSAN=ON -DKCP_DEBUG_LINES_ONLY=ON -DKCP_BENCH=OFF \
  -DKCP_TEST_APISERVER="$root/build/bin/kube-test-apiserver" "${launcher[@]}" >/dev/null
cmake --build build-tsan -j"$jobs" --target cache_unit_tests watch_unit_tests informer_unit_tests \
  upstream_lister_watcher_tests proxy_unit_tests kube-cache-proxy

step "test: tsan"
# Reports go to files (log_path), so that a race in a child process (the proxy under an
# integration test, or during its shutdown) fails the step even when the test passed.
rm -rf build-tsan/tsan-reports && mkdir -p build-tsan/tsan-reports
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$root/build-tsan/tsan-reports/race"
tsan_ok=1
(cd build-tsan && ctest --output-on-failure -j"$jobs" --timeout 600 -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$") || tsan_ok=0
if compgen -G "build-tsan/tsan-reports/race*" >/dev/null; then
  cat build-tsan/tsan-reports/race*
  echo "ThreadSanitizer reported the races above" >&2
  tsan_ok=0
fi
[ "$tsan_ok" = 1 ]

step "fuzz: libFuzzer targets, ASan+UBSan, 10 s each"
# A clang build of only the parsers and the fuzz binaries (build-fuzz); each target
# starts from its seed corpus (docs/fuzzing.md). The replay tests above ran the seeds.
bash scripts/fuzz.sh --seconds 10

command -v ccache >/dev/null && ccache --show-stats | grep -E "^(Cacheable calls|  Hits|  Misses|Cache size)" || true
step "all tests passed"
