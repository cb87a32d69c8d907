#!/usr/bin/env bash
# Runs on a GPU machine: Nsight Compute on the first launches of one kernel of a forward
# (`moebench run stages`, eager, one shape, format and M), with the memory and stall figures
# that tell a bandwidth-bound kernel from an issue- or latency-bound one. Clocks are left alone
# (--clock-control none): moebench never changes GPU settings, and its figures are at the
# clocks the GPU chooses. Nsight holds CUPTI, so moebench measures without kernel timing here.
#
#   scripts/kernel-profile.sh [BIN_DIR] [OUT]     (defaults: .gpu, $OUT or .)
#
# Settings: PROFILE_SHAPE (default deepseek-v2-lite), PROFILE_FORMAT (bf16 or int4, default
# bf16), PROFILE_M (default 1), PROFILE_KERNEL (regex, default decode_expert), PROFILE_SKIP
# (launches to skip, default 0), PROFILE_COUNT (default 2: gate_up, then down), PROFILE_TIMEOUT
# (seconds, default 120). BIN_DIR holds the moebench binary.
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
timeout "${PROFILE_TIMEOUT:-120}" "$ncu" --clock-control none \
  -k "regex:${PROFILE_KERNEL:-decode_expert}" --launch-skip "${PROFILE_SKIP:-0}" --launch-count "${PROFILE_COUNT:-2}" \
  --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
  --section MemoryWorkloadAnalysis --metrics "$metrics" \
  "$bin/moebench" run stages --shape "${PROFILE_SHAPE:-deepseek-v2-lite}" \
  --weight-format "${PROFILE_FORMAT:-bf16}" --m "${PROFILE_M:-1}" --mode eager --min-samples 3 \
  --min-time 0 --max-layers 1 --in-process -o "$out/kernel-profile-report.json" \
  > "$out/kernel-profile.txt" 2>&1
grep -E "smsp__|dram__bytes|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued" "$out/kernel-profile.txt"
