#!/usr/bin/env bash
# Runs on a GPU machine: every GPU test, then `moebench selftest`; prints one line per test and
# the selftest table, and packs every log into OUT/gpu-check.tgz.
#
#   scripts/gpu-check.sh [BIN_DIR] [OUT]     (defaults: .gpu from scripts/gpu-bundle.sh, $OUT or .)
#
# Settings: GPU_CHECK_TESTS (names, default every tests/gpu test), GPU_CHECK_TEST_TIMEOUT
# (seconds per test, default 200; test_moe_kernels takes about 70 s on an H200),
# SELFTEST_REPS (default 5; 50 for the full check, about 110 s on an H200; 0 skips it).
# Exit status: 0 when every test and the selftest passed, 1 when one failed, 3 when a test
# skipped (exit 77: no usable GPU) and none failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/.gpu}" && pwd) || exit 2
out=${2:-${OUT:-.}}
export MOEBENCH_FIXTURES=${MOEBENCH_FIXTURES:-$root/fixtures} MOEBENCH_BINARY=$bin/moebench
export MOEBENCH_OWN_ADAPTER=$bin/libmoebench_engine_adapter.so
export MOEBENCH_STALE_CACHE_ADAPTER=$bin/libmoebench_stale_resident_cache_adapter.so
[[ -f $bin/libmoebench_cublas_per_expert_adapter.so ]] &&
  export MOEBENCH_CUBLAS_ADAPTER=$bin/libmoebench_cublas_per_expert_adapter.so
logs=$(mktemp -d)/gpu-check
mkdir -p "$logs" "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
  > "$logs/nvidia-smi.txt" 2>&1 || true
status=0
if [[ -n "${GPU_CHECK_TESTS:-}" ]]; then read -r -a tests <<<"$GPU_CHECK_TESTS"; else
  tests=(); for t in "$bin"/test_*; do [[ -x "$t" ]] && tests+=("$(basename "$t")"); done; fi
for t in "${tests[@]}"; do
  start=$(date +%s)
  timeout "${GPU_CHECK_TEST_TIMEOUT:-200}" "$bin/$t" > "$logs/$t.log" 2>&1; rc=$?
  if (( rc == 77 )); then
    echo "$t $(tail -1 "$logs/$t.log")"
    (( status == 0 )) && status=3
    continue
  fi
  (( rc != 0 )) && status=1
  echo "$t rc=$rc $(( $(date +%s) - start ))s $(grep -E '^\[doctest\] (test cases|assertions)' "$logs/$t.log" | sed -E 's/ +/ /g' | tr '\n' ' ')"
  (( rc != 0 )) && grep -B3 -A10 -E "ERROR|FATAL" "$logs/$t.log" | head -40
done
reps=${SELFTEST_REPS:-5}
if (( reps > 0 && status != 3 )); then
  start=$(date +%s)
  "$bin/moebench" selftest --reps "$reps" -o "$logs/selftest.json" > "$logs/selftest.log" 2>&1; rc=$?
  (( rc != 0 )) && status=1
  echo "selftest --reps $reps rc=$rc $(( $(date +%s) - start ))s"
  grep -A20 -E "^probe +mutation" "$logs/selftest.log"
fi
tar czf "$out/gpu-check.tgz" -C "$(dirname "$logs")" gpu-check
exit $status
