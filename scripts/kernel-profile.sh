#!/usr/bin/env bash
# Runs on a GPU machine: Nsight Compute on the first launches of one kernel of the kernel bench
# (tests/gpu/test_moe_kernels.cu, "bench" test case) for one shape, with the stall reasons that
# told decode v3 from v4 (docs/kernel-notes.md). Clocks are left alone (--clock-control none):
# moebench never changes GPU settings, and its figures are at the clocks the GPU chooses.
#
#   scripts/kernel-profile.sh [BIN_DIR] [OUT]     (defaults: .gpu, $OUT or .)
#
# Settings: PROFILE_SHAPE (default deepseek-v2-lite), PROFILE_KERNEL (regex, default
# decode_expert), PROFILE_SKIP (launches to skip, default 0), PROFILE_COUNT (default 2),
# PROFILE_TIMEOUT (seconds, default 120).
# The bench's first launches are bf16 at M=1: gate_up, then down.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/.gpu}" && pwd) || exit 2
out=${2:-${OUT:-.}}
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
[[ -x "$ncu" ]] || { echo "kernel-profile.sh: ncu not found (set NCU)" >&2; exit 3; }
stalls=long_scoreboard,lg_throttle,short_scoreboard,wait,math_pipe_throttle,no_instruction,barrier,mio_throttle,not_selected,branch_resolving
metrics="smsp__inst_executed.sum,dram__bytes_read.sum"
for s in ${stalls//,/ }; do metrics+=",smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"; done
export MOEBENCH_FIXTURES=${MOEBENCH_FIXTURES:-$root/fixtures}
# The bench goes on after the profiled launches; the timeout ends it (results are printed by then).
MOE_BENCH_SHAPE=${PROFILE_SHAPE:-deepseek-v2-lite} timeout "${PROFILE_TIMEOUT:-120}" "$ncu" --clock-control none \
  -k "regex:${PROFILE_KERNEL:-decode_expert}" --launch-skip "${PROFILE_SKIP:-0}" --launch-count "${PROFILE_COUNT:-2}" \
  --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
  --section MemoryWorkloadAnalysis --metrics "$metrics" \
  "$bin/test_moe_kernels" -tc="bench*" --no-skip > "$out/kernel-profile.txt" 2>&1
grep -E "smsp__|dram__bytes|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued" "$out/kernel-profile.txt"
