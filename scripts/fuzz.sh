#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan+UBSan) in build-fuzz and runs
# each one, starting from its seed corpus in tests/fuzz/corpus/<target>/.
#   scripts/fuzz.sh                       every target for 10 s, two at a time (the test command)
#   scripts/fuzz.sh --seconds 60 kubeconfig
#   scripts/fuzz.sh --runs 1000000 --parallel 1   the long run of docs/fuzzing.md
# Inputs a run finds are kept in build-fuzz/corpus/<target>/ (so a second run continues
# where the first stopped); a finding (crash, sanitizer report, broken invariant, leak,
# timeout) is written to build-fuzz/findings/<target>/ and fails the script. Add it to
# tests/fuzz/corpus/<target>/ with the fix so the replay test keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

limit=(-max_total_time=10)
parallel=$(nproc)
targets=()
while (($#)); do
  case "$1" in
    --seconds) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2"); shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

cxx=$(command -v clang++ || command -v clang++-14)
build=${KCP_FUZZ_BUILD_DIR:-build-fuzz}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Only the fuzz binaries and the parser sources they need are built (target kcp_fuzz).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DKCP_FUZZ=ON -DKCP_BENCH=OFF -DKCP_TEST_APISERVER=/bin/true "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target kcp_fuzz
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(cd "$build/bin" && ls -- *_fuzz | sed 's/_fuzz$//')
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local t=$1; shift
  mkdir -p "$build/corpus/$t" "$build/findings/$t"
  # Requests, selectors and RVs longer than 1 KB only repeat what shorter ones cover and
  # slow every input down; upstream JSON and kubeconfigs need room for whole objects.
  local max_len=1024
  case "$t" in object_meta | watch_event | list_page | metadata_list | protobuf_object | kubeconfig) max_len=4096 ;; esac
  # -timeout: one input taking seconds is a finding too (unbounded work on bad input).
  if "$build/bin/${t}_fuzz" "$@" -max_len=$max_len -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/findings/$t/" "$build/corpus/$t" "tests/fuzz/corpus/$t" \
      >"$build/$t.log" 2>&1; then
    printf '%-16s ok    %12s inputs  %s\n' "$t" \
      "$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/$t.log")" \
      "$(grep -o 'cov: [0-9]*' "$build/$t.log" | tail -1)"
  else
    printf '%-16s FAILED (log: %s)\n' "$t" "$build/$t.log"
    tail -n 40 "$build/$t.log"
    return 1
  fi
}
export -f run_one
export build

printf '%s\n' "${targets[@]}" | xargs -P "$parallel" -I{} bash -c 'run_one "$@"' _ {} "${limit[@]}"
