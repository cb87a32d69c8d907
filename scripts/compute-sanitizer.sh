#!/usr/bin/env bash
# Runs the GPU tests and a small moebench suite under compute-sanitizer's memcheck, racecheck,
# synccheck and initcheck, and writes a summary (Markdown) of what each tool said.
#
#   scripts/compute-sanitizer.sh [BIN_DIR]
#
# BIN_DIR: a build folder (apps/moebench, tests/test_*) or a flat folder holding moebench and
# the test_* binaries (copied to a GPU machine); default build/. Needs a GPU. Settings:
#   MOEBENCH_FIXTURES               shapes/ and cases/ for moebench (default: the repo's fixtures/)
#   MOEBENCH_SANITIZER_TOOLS        default "memcheck racecheck synccheck initcheck"
#   MOEBENCH_SANITIZER_TESTS        GPU test binaries to run (default: those of tests/gpu/)
#   MOEBENCH_SANITIZER_RUN_ARGS     arguments of `moebench run` (default: the small settings below)
#   MOEBENCH_SANITIZER_PROBES       probes, each run on its own (default: the default suite of
#                                   `moebench list`); "suite" runs them all in one `moebench run`
#   MOEBENCH_SANITIZER_TIMEOUT      seconds per tool and binary (default 1800)
#   MOEBENCH_SANITIZER_OUT          output folder (default compute-sanitizer-YYYYmmdd-HHMMSS)
#   COMPUTE_SANITIZER               the compute-sanitizer binary (default: PATH, then CUDA's bin)
#
# Exit status: 0 when every run was clean, 1 when a tool reported an error, a run timed out or
# crashed, or a probe errored (exit 4: its kernels were not checked). A FAIL verdict (moebench
# exiting 1) is listed but is not a sanitizer finding: the tools slow kernels down 10-100x,
# which timing probes may notice. CUPTI cannot subscribe while compute-sanitizer does
# (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), hence --no-kernel-timing below.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$root/build}" && pwd) || { echo "compute-sanitizer.sh: no folder '${1:-}'" >&2; exit 2; }

sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
if [[ ! -x "$sanitizer" ]]; then
  echo "compute-sanitizer.sh: compute-sanitizer not found (install the CUDA toolkit's" \
       "cuda-sanitizer package or set COMPUTE_SANITIZER)" >&2
  exit 3
fi

find_binary() {  # name -> path in a build folder or a flat folder
  local name=$1
  for p in "$bin/$name" "$bin/apps/$name" "$bin/tests/$name"; do
    if [[ -x "$p" && -f "$p" ]]; then echo "$p"; return 0; fi
  done
  return 1
}

moebench=$(find_binary moebench) || { echo "compute-sanitizer.sh: no moebench in $bin" >&2; exit 2; }
if [[ -z "${MOEBENCH_FIXTURES:-}" && -d "$root/fixtures/shapes" ]]; then
  export MOEBENCH_FIXTURES=$root/fixtures
fi

if [[ -n "${MOEBENCH_SANITIZER_TESTS:-}" ]]; then
  read -r -a test_names <<<"$MOEBENCH_SANITIZER_TESTS"
else
  test_names=()
  for src in "$root"/tests/gpu/test_*.cpp "$root"/tests/gpu/test_*.cu; do
    [[ -e "$src" ]] && test_names+=("$(basename "${src%.*}")")
  done
fi

# The default suite on the smallest shapes and few samples: every probe's kernels and host paths
# run, in minutes rather than hours under the slowest tool. CUPTI (kernel timing) is off: it
# and compute-sanitizer both attach to the same driver callbacks.
default_run_args="--shape tiny,tiny-partial-group --m 1,4 --min-samples 2 --max-samples 3
  --min-time 0 --max-noise 100 --timeout 10 --warmup 1 --copy-bytes 1073741824 --no-kernel-timing"
read -r -a run_args <<<"${MOEBENCH_SANITIZER_RUN_ARGS:-$default_run_args}"
read -r -a tools <<<"${MOEBENCH_SANITIZER_TOOLS:-memcheck racecheck synccheck initcheck}"
if [[ -n "${MOEBENCH_SANITIZER_PROBES:-}" ]]; then
  read -r -a probes <<<"$MOEBENCH_SANITIZER_PROBES"
else
  # The default suite: rows of `moebench list` whose second column says yes.
  read -r -a probes <<<"$("$moebench" list probes 2>/dev/null | awk '$2 == "yes" {print $1}' | tr '\n' ' ')"
  ((${#probes[@]})) || probes=(suite)
fi
limit=${MOEBENCH_SANITIZER_TIMEOUT:-1800}
out=${MOEBENCH_SANITIZER_OUT:-compute-sanitizer-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.md

{
  echo "# compute-sanitizer: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "- binaries: \`$bin\`; moebench: \`$("$moebench" --version 2>/dev/null | head -1)\`"
  echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "- $("$sanitizer" --version 2>/dev/null | grep -i version | head -1)"
  echo "- moebench run ${run_args[*]}"
  echo
  echo "| tool | binary | result | errors | exit | seconds | log |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
} >"$summary"

status=0
# One (tool, binary) run: the sanitizer's exit code 99 means it found errors. Child processes
# (moebench runs probes in children) are followed, and their error summaries are added up.
run_one() {
  local tool=$1 label=$2; shift 2
  local log=$out/$tool-$label.log start rc errors result
  start=$(date +%s)
  timeout --signal=INT --kill-after=60 "$limit" "$sanitizer" --tool "$tool" --error-exitcode 99 \
    --target-processes all --print-limit 200 "$@" >"$log" 2>&1
  rc=$?
  # One "ERROR SUMMARY: N errors" per process (not the "N errors were not printed" line).
  errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ errors?$' "$log" | awk '{n += $3} END {print n + 0}')
  if ((rc == 124 || rc == 137)); then result=TIMEOUT
  elif ((errors > 0 || rc == 99)); then result=ERRORS
  elif ((rc == 77)); then result=SKIPPED
  elif ((rc == 0)); then result=CLEAN
  elif [[ $label == moebench-* && $rc == 1 ]]; then result="CLEAN (FAIL verdicts)"
  elif [[ $label == moebench-* && $rc == 4 ]]; then result="PROBE ERRORS"  # not checked
  elif ((rc == 3)); then result="NO GPU"  # moebench's environment exit: nothing was checked
  else result=FAILED
  fi
  case $result in CLEAN*|SKIPPED) ;; *) status=1 ;; esac
  echo "| $tool | $label | $result | $errors | $rc | $(($(date +%s) - start)) | ${log#$out/} |" >>"$summary"
  echo "compute-sanitizer: $tool $label: $result ($errors errors, exit $rc)" >&2
}

for tool in "${tools[@]}"; do
  for name in "${test_names[@]}"; do
    if path=$(find_binary "$name"); then
      run_one "$tool" "$name" "$path"
    else
      echo "| $tool | $name | MISSING | | | | |" >>"$summary"
      echo "compute-sanitizer: $name not found in $bin" >&2
      status=1
    fi
  done
  # One run a probe: a slow probe under a slow tool then costs its own row, not the others'.
  for probe in "${probes[@]}"; do
    if [[ $probe == suite ]]; then
      run_one "$tool" moebench-run "$moebench" run "${run_args[@]}" -o "$out/$tool-report.json"
    else
      run_one "$tool" "moebench-$probe" "$moebench" run "$probe" "${run_args[@]}" -o "$out/$tool-$probe.json"
    fi
  done
done

echo >>"$summary"
echo "Logs and the reports of the moebench runs are beside this file." >>"$summary"
echo "compute-sanitizer: summary in $summary" >&2
cat "$summary"
exit $status
