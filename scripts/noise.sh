#!/usr/bin/env bash
# Run-to-run noise: runs `moebench run RUN_ARGS...` RUNS times, each as a separate process
# writing its own report, then `moebench noise` prints per case the median GPU time of each run
# and how far those medians spread ((max - min) / mean and std / mean). The issue target is a
# spread under 1% over 3 runs.
#
#   scripts/noise.sh [-n RUNS] [-d DIR] [-t PCT] [-m METRICS] [--] RUN_ARGS...
#
#   -n RUNS     separate runs, at least 2 (default 3)
#   -d DIR      folder for the reports run-1.json ... and noise.json (default: a new
#               noise-YYYYmmdd-HHMMSS folder in the current directory)
#   -t PCT      spread above this percentage of the mean is NOISY (default 1)
#   -m METRICS  what to compare, comma-separated: gpu, host, gbps (default gpu)
#   RUN_ARGS    arguments of `moebench run` (not -o/--output: each run gets its own report)
#
# e.g. scripts/noise.sh -- bandwidth --shape deepseek-v2-lite --m 1,16 --mode graph
# The binary is $MOEBENCH, else $MOEBENCH_BUILD_DIR/apps/moebench, else build/apps/moebench.
# Exits 0 once the table is printed (NOISY cases included: they are the finding, not an error).
# A run whose own checks failed still counts (its timings are valid); a run that wrote no
# report stops the script with that run's exit code. 2: bad usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
moebench=${MOEBENCH:-${MOEBENCH_BUILD_DIR:-$root/build}/apps/moebench}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

runs=3 dir="" threshold=1 metrics=gpu
while getopts "n:d:t:m:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    d) dir=$OPTARG ;;
    t) threshold=$OPTARG ;;
    m) metrics=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ ${1:-} == "--" ]] && shift

[[ $runs =~ ^[0-9]+$ ]] && ((runs >= 2)) ||
  { echo "noise.sh: -n '$runs' is not valid: a whole number of runs, at least 2" >&2; exit 2; }
for arg in "$@"; do
  case $arg in
    -o | --output | --output=* | -o?*)
      echo "noise.sh: '$arg': each run writes its own report into the -d folder" >&2
      exit 2
      ;;
  esac
done
[[ -x $moebench ]] || { echo "noise.sh: no moebench at $moebench (build first)" >&2; exit 2; }
dir=${dir:-noise-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$dir"

reports=()
for ((i = 1; i <= runs; i++)); do
  report=$dir/run-$i.json
  echo "noise.sh: run $i of $runs -> $report" >&2
  rm -f "$report"
  status=0
  "$moebench" run "$@" -o "$report" --quiet || status=$?
  if [[ ! -s $report ]]; then
    echo "noise.sh: run $i wrote no report (exit $status)" >&2
    exit $((status == 0 ? 1 : status))
  fi
  ((status == 0)) || echo "noise.sh: run $i exited $status (a check failed or a probe errored); its timings still count" >&2
  reports+=("$report")
done

"$moebench" noise "${reports[@]}" --metric "$metrics" --threshold "$threshold" \
  --format json -o "$dir/noise.json"
exec "$moebench" noise "${reports[@]}" --metric "$metrics" --threshold "$threshold"
