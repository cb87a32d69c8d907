#!/usr/bin/env bash
# Builds the libFuzzer targets of the file loaders (tests/fuzz: shapes and config.json, reports,
# case files) with clang++ into ${MOEBENCH_FUZZ_BUILD_DIR:-build-fuzz} and runs each for
# ${MOEBENCH_FUZZ_SECONDS:-60} seconds over its seed corpus (tests/fuzz/corpus/TARGET).
#
#   scripts/fuzz.sh                      # all targets, as CI runs them
#   scripts/fuzz.sh fuzz_report_loader   # one target
#   MOEBENCH_FUZZ_SECONDS=600 MOEBENCH_FUZZ_SEED=0 scripts/fuzz.sh   # longer, a new seed each run
#
# The mutation seed defaults to 1 so that CI explores the same inputs first on every commit: a
# finding there follows the change, not the luck of the run. Seed 0 lets libFuzzer pick one
# (printed in the log as "Seed:"), for local exploration.
#
# Exits 1 when a target found something (a crash, a sanitizer report, an exception other than
# moe::UsageError, a timeout, running out of memory); the input is kept in BUILD/fuzz/findings/
# and replays with `BUILD/tests/fuzz/TARGET FILE`. Turn it into a test in
# tests/cpu/test_fuzz_regressions.cpp. Inputs that found new coverage accumulate in
# BUILD/fuzz/corpus/ (not in the checked-in seeds), so later local runs start from there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MOEBENCH_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${MOEBENCH_FUZZ_SECONDS:-60}
seed=${MOEBENCH_FUZZ_SEED:-1}
"$root/scripts/setup.sh"
export PATH="$PATH:/usr/local/cuda/bin"  # project() enables CUDA; no CUDA file is built here

targets=(fuzz_shape_loader fuzz_report_loader fuzz_case_loader)
if (($#)); then targets=("$@"); fi

# Only the fuzz targets are built; CUDA architectures are irrelevant here (PTX-only keeps
# configure-time checks cheap).
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="${MOEBENCH_FUZZ_CXX:-clang++}" -DCMAKE_CUDA_ARCHITECTURES=90a-virtual \
  -DMOEBENCH_FUZZ=ON -DMOEBENCH_BUILD_TESTS=OFF -DMOEBENCH_BUILD_MICROBENCH=OFF >/dev/null
cmake --build "$build" --parallel "${MOEBENCH_JOBS:-$(nproc)}" --target "${targets[@]}"

failed=()
for t in "${targets[@]}"; do
  seeds=$root/tests/fuzz/corpus/$t
  regressions=$root/tests/fuzz/regressions/$t  # past findings: seeds too
  corpus=$build/fuzz/corpus/$t
  findings=$build/fuzz/findings/$t
  log=$build/fuzz/$t.log
  mkdir -p "$corpus" "$findings" "$regressions"
  echo "fuzz: $t for ${seconds}s (seeds: ${seeds#$root/}, log: $log)" >&2
  # -timeout: one input taking 10 s is a hang worth reporting; -rss_limit_mb likewise for memory.
  if "$build/tests/fuzz/$t" "$corpus" "$seeds" "$regressions" -dict="$root/tests/fuzz/json.dict" \
       -max_total_time="$seconds" -seed="$seed" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$findings/" >"$log" 2>&1; then
    echo "fuzz: $t clean: $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') runs," \
         "$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}')/s," \
         "$(grep -cE '' <(ls "$corpus")) corpus files, $(grep -oE 'cov: [0-9]+' "$log" | tail -1)" >&2
  else
    echo "fuzz: $t FOUND A PROBLEM; the input is in ${findings#$root/}/; tail of the log:" >&2
    grep -vE '^#[0-9]+' "$log" | tail -40 >&2
    failed+=("$t")
  fi
done

if ((${#failed[@]})); then
  echo "fuzz: findings in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s each without a finding" >&2
